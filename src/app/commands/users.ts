/**
 * `users add|reset-password|remove <username>`: the operator's user administration. Passwords are
 * read from standard input or a hidden prompt, never from the arguments (they would show in `ps`
 * and shell history).
 */
import { rmSync } from "node:fs";
import type { Config } from "../config.ts";
import { createLogger } from "../logger.ts";
import { initialAdminPasswordFile } from "../secrets.ts";
import { type CliOutput, EXIT, type RegisterCommand } from "./command.ts";

type UserAction = "add" | "reset-password" | "remove";

export const registerUsers: RegisterCommand = (program, run, output) => {
  const users = program.command("users").description("manage the users who may log in");
  const action = (name: UserAction, description: string) =>
    users
      .command(name)
      .argument("<username>")
      .description(description)
      .action((username: string) => run((config) => changeUser(config, name, username, output)));
  action("add", "create a user; the password is read from stdin (first line) or a hidden prompt");
  action("reset-password", "set a user's password (read like `users add`); the user's earlier tokens stop working");
  action("remove", "delete a user; their tokens stop working");
  users
    .command("list")
    .description("list the users (username and creation time, one JSON object a line)")
    .action(() => run((config) => listUsers(config, output)));
};

async function listUsers(config: Config, output: CliOutput): Promise<number> {
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, createLogger("warn"));
  try {
    for (const user of await (await root.manageUsers()).list()) {
      output.out(`${JSON.stringify({ username: user.username, created_at: user.createdAt.toISOString() })}\n`);
    }
    return EXIT.ok;
  } finally {
    await root.close();
  }
}

async function changeUser(config: Config, action: UserAction, username: string, output: CliOutput): Promise<number> {
  const { CompositionRoot } = await import("../composition-root.ts");
  const root = new CompositionRoot(config, createLogger("warn"));
  try {
    const manageUsers = await root.manageUsers();
    if (action === "remove") {
      await manageUsers.remove(username);
      output.out(`user '${username}' removed\n`);
    } else {
      const password = await readPassword();
      if (action === "add") {
        await manageUsers.add(username, password);
        output.out(`user '${username}' created\n`);
      } else {
        await manageUsers.resetPassword(username, password);
        output.out(`password of '${username}' changed\n`);
      }
    }
    if (action !== "add" && username.trim() === config.adminUsername) {
      // The first-start password file no longer holds a working password.
      rmSync(initialAdminPasswordFile(config.dataDir), { force: true });
    }
    return EXIT.ok;
  } finally {
    await root.close();
  }
}

/** The first line of stdin when it is piped; otherwise a prompt with echo off, asked twice. */
async function readPassword(): Promise<string> {
  if (!process.stdin.isTTY) {
    const text = await new Response(Bun.stdin.stream()).text();
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
