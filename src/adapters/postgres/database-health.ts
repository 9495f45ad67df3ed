import { DatabaseUnavailable } from "../../domain/errors.ts";
import type { DatabaseHealth } from "../../ports/database-health.ts";
import type { SqlClient } from "./sql-client.ts";

/**
 * A real round trip: `SELECT 1`. Rejects with DatabaseUnavailable when the connection is broken
 * or the answer takes longer than `timeoutMs` (a hung server must not hang the health check).
 */
export class PostgresDatabaseHealth implements DatabaseHealth {
  constructor(
    private readonly db: SqlClient,
    private readonly timeoutMs = 3000,
  ) {}

  async ping(): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DatabaseUnavailable()), this.timeoutMs);
    });
    try {
      await Promise.race([this.db.query("SELECT 1"), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
