// The short run ids the console shows and the CLI takes: the first hexadecimal digits of a run id, hyphens
// ignored. One rule for the API's filter, the console's search box and the CLI (no database here: the console
// bundles it).

/** At least 4 hexadecimal digits, hyphens anywhere between them, at most a whole id's 32. */
export const RUN_ID_PREFIX = /^(?:[0-9a-fA-F]-?){4,32}$/;

/** An id's or a prefix's digits alone, in lower case: what prefixes are compared by. */
export const idDigits = (id: string): string => id.replaceAll('-', '').toLowerCase();
