import { dlopen, FFIType } from "bun:ffi";

/**
 * onnxruntime-node 1.30 on Linux starts Microsoft's telemetry client (1DS) with its first session:
 * it is set up to send events to mobile.events.data.microsoft.com, keeps a device id and an event
 * database in $HOME/.cache/Microsoft/DeveloperTools/.onnxruntime/ and writes `.ses` and
 * `mat-debug-<pid>.log` into TMPDIR. The service reaches no one at run time and writes only to its
 * DATA_DIR, so this turns that client off the way onnxruntime reads it: ORT_DISABLE_TELEMETRY=1 in
 * the process's own environment (Bun's process.env does not reach native getenv), set before the
 * first session is created. Only the C library's setenv is called; nothing else is read or changed.
 */
export function disableOnnxruntimeTelemetry(): void {
  const { setenv } = dlopen("libc.so.6", {
    setenv: { args: [FFIType.cstring, FFIType.cstring, FFIType.i32], returns: FFIType.i32 },
  }).symbols;
  if (setenv(Buffer.from("ORT_DISABLE_TELEMETRY\0"), Buffer.from("1\0"), 1) !== 0) {
    throw new Error("cannot turn off onnxruntime's telemetry: setenv(ORT_DISABLE_TELEMETRY) failed");
  }
}
