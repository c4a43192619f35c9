// Imported first by the CLI, before anything loads graphql: graphql-js picks its `instanceof` checks when it is
// first evaluated, and the development ones look up constructor names on every failed check (3–5% of the
// API's CPU per chunk report, most of it in variable coercion). NODE_ENV set by the caller wins.
process.env.NODE_ENV ??= 'production';
