// Where a web call's single-use access token is kept until the browser presents it: the store, so
// that the browser's media socket may reach any node sharing it. Only the token's hash is kept.

export interface WebCallTokenRepository {
  issue(tokenHash: string, orgId: string, callId: string, expiresAt: number): Promise<void>;
  /**
   * Takes the token out, once (two nodes redeeming it together: one gets it); undefined when unknown or already taken.
   */
  take(tokenHash: string): Promise<{ orgId: string; callId: string; expiresAt: number } | undefined>;
}
