/** The import: pick a file, watch it go in by batches, see what could not be imported and why. */
import type { Api } from "./api.ts";
import { byId, formatCount, h, isAbort, messageOf, say } from "./dom.ts";
import { type ImportProgress, importItems, importText, readImportFile, sendBatch } from "./import-file.ts";

/** Products per POST /products/bulk (halved when the service finds a batch too large). */
const IMPORT_BATCH_SIZE = 100;

/** Failures listed on the page; the rest are counted. */
const MAX_FAILURES_SHOWN = 200;

export class ImportView {
  private readonly heading = byId("import-title", HTMLHeadingElement);
  private readonly form = byId("import-form", HTMLFormElement);
  private readonly file = byId("import-file", HTMLInputElement);
  private readonly start = byId("import-start", HTMLButtonElement);
  private readonly cancel = byId("import-cancel", HTMLButtonElement);
  private readonly error = byId("import-error", HTMLParagraphElement);
  private readonly section = byId("import-progress", HTMLElement);
  private readonly bar = byId("import-bar", HTMLProgressElement);
  private readonly status = byId("import-status", HTMLParagraphElement);
  private readonly counts = {
    created: byId("import-created", HTMLElement),
    updated: byId("import-updated", HTMLElement),
    unchanged: byId("import-unchanged", HTMLElement),
    failed: byId("import-failed", HTMLElement),
  };
  private readonly failures = byId("import-failures", HTMLDivElement);
  private readonly failureList = byId("import-failure-list", HTMLUListElement);

  private running: AbortController | undefined;
  /** Called after an import stored something (the catalogue and its categories changed). */
  onChange: () => void = () => {};

  constructor(private readonly api: Api) {
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.run();
    });
    this.cancel.addEventListener("click", () => this.running?.abort());
    say(this.error, "");
  }

  focus(): void {
    this.heading.focus();
  }

  /** Stops the import under way (logging out). */
  stop(): void {
    this.running?.abort();
  }

  private async run(): Promise<void> {
    const file = this.file.files?.[0];
    if (!file) return;
    say(this.error, "");
    const running = new AbortController();
    this.running = running;
    this.start.disabled = true;
    this.cancel.hidden = false;
    let last: ImportProgress | undefined;
    // Every batch goes to the catalogue the import began in, should another be picked meanwhile.
    const path = this.api.pathIn("/products/bulk");
    try {
      const items = readImportFile(file.name, importText(new Uint8Array(await file.arrayBuffer())));
      this.section.hidden = false;
      last = await importItems(items, {
        batchSize: IMPORT_BATCH_SIZE,
        signal: running.signal,
        send: (values, signal) => sendBatch(this.api, values, signal, undefined, path),
        onProgress: (progress) => {
          last = progress;
          this.show(progress);
        },
      });
      say(
        this.status,
        `Importación terminada: ${formatCount(last.total)} ${last.total === 1 ? "producto procesado" : "productos procesados"}.`,
      );
    } catch (error) {
      if (isAbort(error)) {
        say(
          this.status,
          `Importación detenida: ${formatCount(last?.done ?? 0)} de ${formatCount(last?.total ?? 0)} procesados.`,
        );
      } else {
        say(this.error, messageOf(error));
        if (last)
          say(this.status, `Importación interrumpida en ${formatCount(last.done)} de ${formatCount(last.total)}.`);
      }
    } finally {
      if (last && last.done > 0) this.onChange();
      this.running = undefined;
      this.start.disabled = false;
      this.cancel.hidden = true;
    }
  }

  private show(progress: ImportProgress): void {
    this.bar.max = Math.max(1, progress.total);
    this.bar.value = progress.done;
    const done = `${formatCount(progress.done)} de ${formatCount(progress.total)} productos procesados`;
    say(
      this.status,
      progress.waitingSeconds === undefined
        ? `${done}…`
        : `${done}; esperando ${formatCount(progress.waitingSeconds)} s por el límite de peticiones…`,
    );
    for (const [name, element] of Object.entries(this.counts)) {
      element.textContent = formatCount(progress.counts[name as keyof typeof progress.counts]);
    }
    const shown = progress.failures.slice(0, MAX_FAILURES_SHOWN);
    this.failureList.replaceChildren(
      ...shown.map(({ where, detail }) => h("li", {}, h("strong", { text: `${where}: ` }), detail)),
    );
    if (progress.failures.length > shown.length) {
      this.failureList.append(
        h("li", { text: `y ${formatCount(progress.failures.length - shown.length)} más con errores.` }),
      );
    }
    this.failures.hidden = progress.failures.length === 0;
  }
}
