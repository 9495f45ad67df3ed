/**
 * A TCP port on 127.0.0.1 that nothing listens on now, chosen by the kernel (bind to port 0) for a
 * child process to listen on. A random number would do worse: ports from 32768 are the kernel's
 * ephemeral range, where any outgoing connection (to PostgreSQL, say) may hold the one drawn.
 */
export async function freePort(): Promise<number> {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const { port } = server;
  await server.stop(true);
  if (port === undefined) throw new Error("no free port");
  return port;
}
