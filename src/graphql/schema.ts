import { lexicographicSortSchema, printSchema, type GraphQLSchema } from 'graphql';
import { builder } from './builder.js';
import './scalars.js';
import './runs.js';
import './manifest.js';
import './partitions.js';
import './events.js';
import './reissue.js';
import './gate.js';
import './jobs.js';
import './validation.js';
import './publish.js';
import './publish-unknown.js';
import './operator.js';
import './job-pause.js';
import './backfills.js';
import './pools.js';
import './bulk.js';
import './cleanup.js';
import './monitor.js';
import './processes.js';
import './notifications.js';
import './alert-groups.js';
import './me.js';
import './sessions.js';
import './subscriptions.js';

let schema: GraphQLSchema | undefined;

export function buildSchema(): GraphQLSchema {
  schema ??= builder.toSchema({ sortSchema: false });
  return schema;
}

/** The SDL committed as schema/schema.graphql. */
export function printSchemaSdl(): string {
  return `${printSchema(lexicographicSortSchema(buildSchema()))}\n`;
}
