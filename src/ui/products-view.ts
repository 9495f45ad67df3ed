/**
 * The catalogue: products by pages (filtered by category, by id or newest first), and a dialog to
 * add or edit one and another to confirm deleting it.
 */
import { LIST_LIMIT } from "../domain/manage-products.ts";
import { PRODUCT_FIELD_MAX_LENGTH } from "../domain/product.ts";
import type { Api } from "./api.ts";
import { byId, formatCount, h, messageOf, say } from "./dom.ts";
import type { Category } from "./search-view.ts";

export interface Product {
  id: number;
  name: string;
  description: string;
  category: string;
  sku?: string;
}

interface Page {
  items: Product[];
  total: number;
  next_cursor: string | null;
}

const EDITABLE = ["name", "description", "category"] as const;

export class ProductsView {
  private readonly heading = byId("products-title", HTMLHeadingElement);
  private readonly create = byId("product-new", HTMLButtonElement);
  private readonly filter = byId("products-filter", HTMLFormElement);
  private readonly category = byId("products-category", HTMLSelectElement);
  private readonly order = byId("products-order", HTMLSelectElement);
  private readonly total = byId("products-total", HTMLParagraphElement);
  private readonly notice = byId("products-notice", HTMLParagraphElement);
  private readonly error = byId("products-error", HTMLParagraphElement);
  private readonly body = byId("products-body", HTMLTableSectionElement);
  private readonly more = byId("products-more", HTMLButtonElement);

  private readonly dialog = byId("product-dialog", HTMLDialogElement);
  private readonly dialogTitle = byId("product-dialog-title", HTMLHeadingElement);
  private readonly productForm = byId("product-form", HTMLFormElement);
  private readonly fields = {
    name: byId("product-name", HTMLInputElement),
    description: byId("product-description", HTMLTextAreaElement),
    category: byId("product-category", HTMLInputElement),
    sku: byId("product-sku", HTMLInputElement),
  };
  private readonly categoryOptions = byId("category-options", HTMLDataListElement);
  private readonly productError = byId("product-error", HTMLParagraphElement);
  private readonly save = byId("product-save", HTMLButtonElement);

  private readonly deleteDialog = byId("delete-dialog", HTMLDialogElement);
  private readonly deleteForm = byId("delete-form", HTMLFormElement);
  private readonly deleteText = byId("delete-dialog-text", HTMLParagraphElement);
  private readonly deleteError = byId("delete-error", HTMLParagraphElement);
  private readonly deleteConfirm = byId("delete-confirm", HTMLButtonElement);

  private cursor: string | null = null;
  private count = 0;
  /** The product in the dialog; null while adding one. */
  private editing: Product | null = null;
  private deleting: Product | null = null;
  /** Called after a product is added, changed or deleted (the categories may have changed). */
  onChange: () => void = () => {};

  constructor(private readonly api: Api) {
    for (const name of [...EDITABLE, "sku"] as const) this.fields[name].maxLength = PRODUCT_FIELD_MAX_LENGTH[name];
    this.filter.addEventListener("submit", (event) => event.preventDefault());
    this.category.addEventListener("change", () => void this.reload());
    this.order.addEventListener("change", () => void this.reload());
    this.more.addEventListener("click", () => void this.loadPage());
    this.create.addEventListener("click", () => this.openEditor(null));
    this.productForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.saveProduct();
    });
    byId("product-cancel", HTMLButtonElement).addEventListener("click", () => this.dialog.close());
    this.deleteForm.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.deleteProduct();
    });
    byId("delete-cancel", HTMLButtonElement).addEventListener("click", () => this.deleteDialog.close());
    for (const element of [this.notice, this.error, this.productError, this.deleteError]) say(element, "");
  }

  focus(): void {
    this.heading.focus();
  }

  /** The categories for the filter and for the editor's suggestions. */
  setCategories(categories: readonly Category[]): void {
    const chosen = this.category.value;
    this.category.replaceChildren(
      h("option", { text: "Todas", attrs: { value: "" } }),
      ...categories.map((category) =>
        h("option", {
          text: `${category.name} (${formatCount(category.products)})`,
          attrs: { value: category.name },
        }),
      ),
    );
    this.category.value = categories.some((category) => category.name === chosen) ? chosen : "";
    this.categoryOptions.replaceChildren(
      ...categories.map((category) => h("option", { attrs: { value: category.name } })),
    );
  }

  /** The first page again, with the current filter. */
  async reload(): Promise<void> {
    this.cursor = null;
    this.body.replaceChildren();
    await this.loadPage();
  }

  private async loadPage(): Promise<void> {
    const params = new URLSearchParams({ limit: String(LIST_LIMIT.default), order: this.order.value });
    if (this.category.value) params.append("category", this.category.value);
    if (this.cursor) params.set("cursor", this.cursor);
    say(this.error, "");
    try {
      const page = await this.api.json<Page>(`/products?${params}`);
      this.body.append(...page.items.map((product) => this.row(product)));
      this.cursor = page.next_cursor;
      this.count = page.total;
      this.showTotal();
      this.more.hidden = page.next_cursor === null;
    } catch (error) {
      say(this.error, messageOf(error));
    }
  }

  private showTotal(): void {
    this.total.textContent =
      this.count === 0
        ? "Ningún producto."
        : `${formatCount(this.count)} ${this.count === 1 ? "producto" : "productos"}.`;
  }

  private row(product: Product): HTMLTableRowElement {
    const edit = h("button", {
      className: "button-secondary",
      text: "Editar",
      attrs: { type: "button", "aria-label": `Editar «${product.name}»` },
    });
    edit.addEventListener("click", () => this.openEditor(product));
    const remove = h("button", {
      className: "button-danger-quiet",
      text: "Borrar",
      attrs: { type: "button", "aria-label": `Borrar «${product.name}»` },
    });
    remove.addEventListener("click", () => this.confirmDelete(product));
    return h(
      "tr",
      { attrs: { "data-id": String(product.id) } },
      h("td", { className: "cell-id", text: String(product.id), attrs: { "data-label": "Id" } }),
      h(
        "td",
        { className: "cell-name", attrs: { "data-label": "Nombre" } },
        h(
          "div",
          {},
          h("span", { className: "product-name", text: product.name }),
          h("span", { className: "product-description", text: product.description }),
        ),
      ),
      h("td", { text: product.category, attrs: { "data-label": "Categoría" } }),
      h("td", { className: "cell-sku", text: product.sku ?? "—", attrs: { "data-label": "SKU" } }),
      h("td", { className: "row-actions" }, edit, remove),
    );
  }

  private openEditor(product: Product | null): void {
    this.editing = product;
    this.dialogTitle.textContent = product ? `Editar producto ${product.id}` : "Nuevo producto";
    for (const name of EDITABLE) this.fields[name].value = product?.[name] ?? "";
    this.fields.sku.value = product?.sku ?? "";
    say(this.productError, "");
    this.save.disabled = false;
    this.dialog.showModal();
    this.fields.name.focus();
  }

  private async saveProduct(): Promise<void> {
    const editing = this.editing;
    const values = {
      name: this.fields.name.value,
      description: this.fields.description.value,
      category: this.fields.category.value,
    };
    const sku = this.fields.sku.value.trim();
    this.save.disabled = true;
    say(this.productError, "");
    try {
      if (editing) {
        const changes: Record<string, string | null> = {};
        for (const name of EDITABLE) if (values[name] !== editing[name]) changes[name] = values[name];
        if (sku !== (editing.sku ?? "")) changes.sku = sku === "" ? null : sku;
        const saved =
          Object.keys(changes).length === 0
            ? editing
            : await this.api.json<Product>(`/products/${editing.id}`, "PATCH", changes);
        this.dialog.close();
        const row = this.body.querySelector(`tr[data-id="${editing.id}"]`);
        const replacement = this.row(saved);
        row?.replaceWith(replacement);
        replacement.querySelector("button")?.focus();
        say(this.notice, `Producto «${saved.name}» guardado.`);
      } else {
        const created = await this.api.json<Product>("/products/", "POST", { ...values, ...(sku ? { sku } : {}) });
        this.dialog.close();
        say(this.notice, `Producto «${created.name}» creado con el id ${created.id}.`);
        await this.reload();
        this.create.focus();
      }
      this.onChange();
    } catch (error) {
      say(this.productError, messageOf(error));
    } finally {
      this.save.disabled = false;
    }
  }

  private confirmDelete(product: Product): void {
    this.deleting = product;
    this.deleteText.textContent = `¿Borrar «${product.name}» (id ${product.id})? No se puede deshacer.`;
    say(this.deleteError, "");
    this.deleteConfirm.disabled = false;
    this.deleteDialog.showModal();
  }

  private async deleteProduct(): Promise<void> {
    const product = this.deleting;
    if (!product) return;
    this.deleteConfirm.disabled = true;
    try {
      await this.api.json<void>(`/products/${product.id}`, "DELETE");
      this.deleteDialog.close();
      const row = this.body.querySelector(`tr[data-id="${product.id}"]`);
      const next = row?.nextElementSibling ?? row?.previousElementSibling;
      row?.remove();
      this.count = Math.max(0, this.count - 1);
      this.showTotal();
      say(this.notice, `Producto «${product.name}» borrado.`);
      (next?.querySelector("button") ?? this.create).focus();
      this.onChange();
    } catch (error) {
      say(this.deleteError, messageOf(error));
    } finally {
      this.deleteConfirm.disabled = false;
    }
  }
}
