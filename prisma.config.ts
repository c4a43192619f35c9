import { defineConfig } from 'prisma/config';

// Migrations are plain SQL applied by `load-control migrate`; Prisma is used only to generate the client.
export default defineConfig({
  schema: 'prisma/schema.prisma',
});
