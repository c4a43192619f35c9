import pino, { type Logger } from 'pino';
import type { Config } from '../config/config.js';

export type { Logger };

/** Structured JSON logs (or pino-pretty for people); the Authorization header never reaches them. */
export function createLogger(config: Pick<Config['logging'], 'level' | 'format'>, service: string): Logger {
  return pino({
    level: config.level,
    base: { service },
    redact: { paths: ['authorization', '*.authorization', '*.headers.authorization', 'token'], censor: '[redacted]' },
    formatters: { level: (label: string) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(config.format === 'pretty' ? { transport: { target: 'pino-pretty', options: { colorize: true } } } : {}),
  });
}
