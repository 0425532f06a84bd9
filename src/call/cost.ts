// docs/contract.md: 1 credit = 1 US cent; price per minute, billed per started second.
export function callCost(
  connectedMs: number,
  pricePerMinute: number,
): { total_credits_used: number; duration_seconds: number } {
  const seconds = connectedMs > 0 ? Math.ceil(connectedMs / 1000) : 0;
  return {
    total_credits_used: Math.round(((seconds * pricePerMinute) / 60) * 10_000) / 10_000,
    duration_seconds: seconds,
  };
}
