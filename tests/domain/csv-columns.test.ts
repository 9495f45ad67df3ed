import { expect, test } from "bun:test";
import { csvDelimiter } from "../../src/domain/csv-columns.ts";

test("a CSV file's delimiter is the semicolon when its header holds more of them than commas outside quotes", () => {
  expect(csvDelimiter("name,description,category")).toBe(",");
  expect(csvDelimiter("name;description;category;price")).toBe(";");
  expect(csvDelimiter('"name;x";description,category')).toBe(",");
  expect(csvDelimiter('name;"a,b,c";category')).toBe(";");
  expect(csvDelimiter("name")).toBe(",");
});
