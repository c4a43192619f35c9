import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The console is a Vite root of its own; the API serves web/dist at `/` (src/server/console.ts).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
  },
  server: {
    // `npx vite --config web/vite.config.ts` during development, with the API on its default port
    proxy: { '/graphql': 'http://127.0.0.1:8080', '/readyz': 'http://127.0.0.1:8080' },
  },
});
