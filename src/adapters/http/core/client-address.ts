/** What Elysia passes as `server`: only its way of telling the peer's address is used. */
export interface PeerSource {
  requestIP(request: Request): { address: string } | null;
}

/**
 * The client's address: the peer's, or behind our reverse proxy (`trustProxy`) the last address
 * the proxy appended to X-Forwarded-For. Undefined when neither is known (a request handled in process).
 */
export function clientAddress(request: Request, server: PeerSource | null | undefined, trustProxy: boolean) {
  const peer = server?.requestIP(request)?.address;
  if (!trustProxy) return peer;
  const forwarded = request.headers.get("x-forwarded-for")?.split(",").at(-1)?.trim();
  return forwarded || peer;
}
