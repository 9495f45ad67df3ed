import { DatabaseUnavailable } from "../../src/domain/errors.ts";
import type { DatabaseHealth } from "../../src/ports/database-health.ts";

/** Healthy until `down` is set, then every ping fails with DatabaseUnavailable. */
export class MemoryDatabaseHealth implements DatabaseHealth {
  down = false;

  async ping(): Promise<void> {
    if (this.down) throw new DatabaseUnavailable();
  }
}
