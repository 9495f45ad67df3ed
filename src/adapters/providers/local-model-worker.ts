/**
 * The worker thread the offline model runs in (LocalEmbedder starts it): ONNX Runtime holds the
 * thread for each forward pass, and here that thread is not the one serving requests. Messages are
 * LocalModelRequest in, LocalModelReply out; a cancelled request stops before its next batch.
 */
import { LocalModel, type LocalModelOptions } from "./local-model.ts";

/** What LocalEmbedder sends, in this order: one `start`, then any number of the others. */
export type LocalModelRequest =
  | ({ kind: "start"; modelDir: string } & LocalModelOptions)
  | { kind: "load"; id: number }
  | { kind: "embed"; id: number; texts: readonly string[] }
  | { kind: "cancel"; id: number }
  | { kind: "close" };

/** `vectors`: the texts' vectors row after row (none for `load`); `error`: why it failed. */
export type LocalModelReply =
  | { id: number; vectors: Float32Array }
  | { id: number; error: string }
  | { kind: "closed" };

declare const self: Worker;

let model: LocalModel | undefined;
/** The requests being answered, and those of them whose caller no longer wants the answer. */
const running = new Set<number>();
const cancelled = new Set<number>();

/** Lets the thread read its messages (a `cancel`) between two forward passes. */
const yieldToMessages = () => new Promise<void>((resolve) => setImmediate(resolve));

function reply(message: LocalModelReply, transfer: ArrayBuffer[] = []): void {
  self.postMessage(message, transfer);
}

async function answer(id: number, work: (model: LocalModel) => Promise<Float32Array<ArrayBuffer>>): Promise<void> {
  running.add(id);
  try {
    if (!model) throw new Error("the offline model's worker was not started");
    const vectors = await work(model);
    reply({ id, vectors }, [vectors.buffer]);
  } catch (error) {
    reply({ id, error: error instanceof Error ? error.message : String(error) });
  } finally {
    running.delete(id);
    cancelled.delete(id);
  }
}

self.onmessage = async (event: MessageEvent<LocalModelRequest>) => {
  const request = event.data;
  switch (request.kind) {
    case "start":
      model = new LocalModel(request.modelDir, request);
      return;
    case "load":
      return answer(request.id, async (it) => {
        await it.load();
        return new Float32Array(0);
      });
    case "embed":
      return answer(request.id, (it) =>
        it.embed(request.texts, async () => {
          await yieldToMessages();
          if (cancelled.has(request.id)) throw new Error("cancelled");
        }),
      );
    case "cancel":
      if (running.has(request.id)) cancelled.add(request.id);
      return;
    case "close":
      await model?.dispose();
      model = undefined;
      reply({ kind: "closed" });
      return;
  }
};
