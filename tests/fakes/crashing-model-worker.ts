/**
 * A stand-in for src/adapters/providers/local-model-worker.ts that speaks its protocol without a
 * model: it answers `load`, embeds any text as the same unit vector, and dies (an uncaught error in
 * the worker) when asked to embed the text "crash". LocalEmbedder's tests point `workerUrl` here.
 */
import type { LocalModelReply, LocalModelRequest } from "../../src/adapters/providers/local-model-worker.ts";

declare const self: Worker;
const DIMENSION = 384;

self.onmessage = (event: MessageEvent<LocalModelRequest>) => {
  const request = event.data;
  const reply = (message: LocalModelReply) => self.postMessage(message);
  if (request.kind === "load") reply({ id: request.id, vectors: new Float32Array(0) });
  if (request.kind === "embed") {
    if (request.texts.includes("crash")) throw new Error("the model's thread crashed");
    reply({
      id: request.id,
      vectors: new Float32Array(request.texts.length * DIMENSION).fill(1 / Math.sqrt(DIMENSION)),
    });
  }
  if (request.kind === "close") reply({ kind: "closed" });
};
