/** Delay before the next try after `attempt` sends failed: min × 2^(attempt−1), capped at max (ref §5.1). */
export function backoffMs(attempt: number, minMs: number, maxMs: number): number {
  // the exponent is capped so that a large attempt count cannot overflow to Infinity
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  return Math.min(minMs * 2 ** exponent, maxMs);
}
