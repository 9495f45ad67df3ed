/**
 * `users add|reset-password|set-role|remove|list`: the operator's user administration, while the
 * service runs too (admin/admin-channel.ts). Passwords are read from standard input or a hidden
 * prompt, never from the arguments (they would show in `ps` and shell history).
 */
import { rmSync } from "node:fs";
import { Option } from "commander";
import { ROLES } from "../../domain/caller.ts";
import { runAdminOperation } from "../admin/admin-channel.ts";
import type { Config } from "../config.ts";
import { initialAdminPasswordFile } from "../secrets.ts";
import { type CliOutput, EXIT, type RegisterCommand, readStandardInput } from "./command.ts";

export const registerUsers: RegisterCommand = (program, run, output) => {
  const users = program.command("users").description("manage the users who may log in");
  users
    .command("add")
    .argument("<username>")
    .addOption(
      new Option("--role <role>", "admin: everything; viewer: search and read the catalogues")
        .choices(ROLES)
        .default("viewer"),
    )
    .description("create a user; the password is read from stdin (first line) or a hidden prompt")
    .action((username: string, options: { role: string }) =>
      run(async (config) => {
        const password = await readPassword(output);
        await runAdminOperation(config, "users.add", { username, password, role: options.role });
        output.out(`user '${username}' created (${options.role})\n`);
        return EXIT.ok;
      }),
    );
  users
    .command("reset-password")
    .argument("<username>")
    .description("set a user's password (read like `users add`); the user's earlier tokens stop working")
    .action((username: string) =>
      run(async (config) => {
        const password = await readPassword(output);
        await runAdminOperation(config, "users.reset-password", { username, password });
        forgetInitialPassword(config, username);
        output.out(`password of '${username}' changed\n`);
        return EXIT.ok;
      }),
    );
  users
    .command("set-role")
    .argument("<username>")
    .argument("<role>", ROLES.join(" or "))
    .description("give a user another role; the user's earlier tokens stop working")
    .action((username: string, role: string) =>
      run(async (config) => {
        await runAdminOperation(config, "users.set-role", { username, role });
        output.out(`'${username}' is now ${role}\n`);
        return EXIT.ok;
      }),
    );
  users
    .command("remove")
    .argument("<username>")
    .description("delete a user; their tokens stop working")
    .action((username: string) =>
      run(async (config) => {
        await runAdminOperation(config, "users.remove", { username });
        forgetInitialPassword(config, username);
        output.out(`user '${username}' removed\n`);
        return EXIT.ok;
      }),
    );
  users
    .command("list")
    .description("list the users (username, role and creation time, one JSON object a line)")
    .action(() =>
      run(async (config) => {
        for (const user of (await runAdminOperation(config, "users.list", {})) as unknown[]) {
          output.out(`${JSON.stringify(user)}\n`);
        }
        return EXIT.ok;
      }),
    );
};

/** The first-start password file no longer holds a working password once the admin's is changed or removed. */
function forgetInitialPassword(config: Config, username: string): void {
  if (username.trim() === config.adminUsername) rmSync(initialAdminPasswordFile(config.dataDir), { force: true });
}

/** The first line of stdin when it is piped; otherwise a prompt with echo off, asked twice. */
async function readPassword(output: CliOutput): Promise<string> {
  if (output.input || !process.stdin.isTTY) {
    const text = await readStandardInput(output);
    return text.split(/\r?\n/)[0] ?? "";
  }
  const first = promptHidden("Password: ");
  const second = promptHidden("Repeat password: ");
  if (first !== second) throw new Error("the passwords do not match");
  return first;
}

function promptHidden(question: string): string {
  const stty = (mode: string) => Bun.spawnSync(["stty", mode], { stdin: "inherit" });
  stty("-echo");
  try {
    return prompt(question) ?? "";
  } finally {
    stty("echo");
    process.stdout.write("\n");
  }
}
