// `load-control token <name> <roles…>`: a new token and its configuration entry; no configuration, no database.
import { formatTokenEntry, generateToken, tokenConfigEntry } from '../auth/tokens.js';
import type { Command } from './process.js';

export const token: Command = {
  usage: `  token <name> <roles…> print a new token and the auth.tokens entry holding its digest
                        (roles: nifi, operator, viewer)`,
  async run({ args }) {
    const [name, ...roles] = args;
    if (!name || roles.length === 0) throw new Error('usage: load-control token <name> <roles…>');
    const token = generateToken();
    const entry = tokenConfigEntry(name, roles, token);
    console.log(`token: ${token}\n\nadd under auth.tokens in the configuration:\n${formatTokenEntry(entry)}`);
  },
};
