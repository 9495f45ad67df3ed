/**
 * The little the page needs of the DOM. Text always goes in as text (never as HTML): product text
 * is untrusted, and the page's Content-Security-Policy refuses HTML from strings anyway.
 */
import { ApiError } from "./api.ts";
import { UnreadableFile } from "./import-file.ts";

/** The element with this id, of this type; a missing one is a bug in index.html. */
export function byId<T extends HTMLElement>(id: string, type: new () => T): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`index.html has no ${type.name} #${id}`);
  return element;
}

interface Props {
  className?: string;
  text?: string;
  attrs?: Record<string, string>;
}

/** A new element with a class, text and attributes, and children appended. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (props.className) element.className = props.className;
  if (props.text !== undefined) element.textContent = props.text;
  for (const [name, value] of Object.entries(props.attrs ?? {})) element.setAttribute(name, value);
  element.append(...children);
  return element;
}

/**
 * Sets a message's text. Messages are live regions (role status or alert) that stay in the page
 * while empty (styles.css gives an empty one no room), so that screen readers announce new text.
 */
export function say(element: HTMLElement, text: string): void {
  element.textContent = text;
}

const decimals = new Intl.NumberFormat("es", { minimumFractionDigits: 3, maximumFractionDigits: 3 });
const integers = new Intl.NumberFormat("es");

/** A score as Spanish readers write it (0,523). */
export function formatScore(value: number): string {
  return decimals.format(value);
}

export function formatCount(value: number): string {
  return integers.format(value);
}

/** The message of an error for the page: the service's Spanish detail, or a generic line. */
export function messageOf(error: unknown): string {
  if (error instanceof ApiError || error instanceof UnreadableFile) return error.message;
  return "Algo ha fallado en la página. Vuelve a intentarlo.";
}

/** An abort the page itself caused (a new search, leaving): nothing to report. */
export function isAbort(error: unknown): boolean {
  return error instanceof DOMException && error.name === "AbortError";
}
