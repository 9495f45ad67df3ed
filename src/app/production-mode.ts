/**
 * Elysia decides once, when its modules load, whether NODE_ENV is "production"; outside production a
 * rejected body is pretty-printed into the validation error at a cost that grows with the square of
 * its nesting (a 60 KB body held the event loop 7 to 13 s). The service always runs with production
 * settings, however it is started: the entry point (main.ts) and the test preload import this module
 * before anything imports Elysia. (config.ts remains the only reader of the environment.)
 */
process.env.NODE_ENV = "production";
