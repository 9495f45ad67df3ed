/** The users' administration as admin operations (admin-channel.ts): `users add|list|remove|reset-password|set-role`. */
import type { CompositionRoot } from "../composition-root.ts";
import { type AdminOperation, textArg } from "./operation.ts";

export const USER_OPERATIONS: Record<string, AdminOperation> = {
  "users.add": async (root: CompositionRoot, args) => {
    const user = await (await root.manageUsers()).add(
      textArg(args, "username"),
      textArg(args, "password"),
      textArg(args, "role"),
    );
    return { username: user.username, role: user.role };
  },
  "users.list": async (root) =>
    (await (await root.manageUsers()).list()).map((user) => ({
      username: user.username,
      role: user.role,
      created_at: user.createdAt.toISOString(),
    })),
  "users.reset-password": async (root, args) => {
    await (await root.manageUsers()).resetPassword(textArg(args, "username"), textArg(args, "password"));
    return {};
  },
  "users.set-role": async (root, args) => {
    await (await root.manageUsers()).setRole(textArg(args, "username"), textArg(args, "role"));
    return {};
  },
  "users.remove": async (root, args) => {
    await (await root.manageUsers()).remove(textArg(args, "username"));
    return {};
  },
};
