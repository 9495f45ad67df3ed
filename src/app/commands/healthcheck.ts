/** `healthcheck`: exit 0 when the service on HOST:PORT answers GET / with 200 (Docker's HEALTHCHECK). */
import type { Config } from "../config.ts";
import { type CliOutput, EXIT, type RegisterCommand } from "./command.ts";

export const registerHealthcheck: RegisterCommand = (program, run, output) => {
  program
    .command("healthcheck")
    .description("exit 0 when the service on HOST:PORT answers GET / with 200, 1 otherwise")
    .action(() => run((config) => healthcheck(config, output)));
};

async function healthcheck(config: Config, output: CliOutput): Promise<number> {
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${config.port}/`;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
    if (response.status === 200) return EXIT.ok;
    output.err(`unhealthy: GET ${url} answered ${response.status}\n`);
  } catch (error) {
    output.err(`unhealthy: nothing answers at ${url} (${(error as Error).message})\n`);
  }
  return EXIT.failed;
}
