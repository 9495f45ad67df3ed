/** Loaded before every test file (bunfig.toml): the app runs in process with the service's production settings. */
import "../../src/app/production-mode.ts";
