/** Entry point of `bun start`, `bun run cli` and the compiled executable. */
import "./production-mode.ts"; // first: before any module of Elysia's is evaluated
import { runCli } from "./cli.ts";

process.exitCode = await runCli(Bun.argv.slice(2), process.env);
