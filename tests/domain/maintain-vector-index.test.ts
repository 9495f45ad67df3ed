import { describe, expect, test } from "bun:test";
import { MaintainCatalogueIndexes, MaintainVectorIndex } from "../../src/domain/maintain-vector-index.ts";
import { FakeVectorIndex } from "../fakes/fake-vector-index.ts";

function policyOn(index: FakeVectorIndex, mode: "auto" | "off" = "auto") {
  const events: Record<string, unknown>[] = [];
  const maintain = new MaintainVectorIndex({
    index,
    policy: { mode, minRows: 1000 },
    log: (event) => events.push(event),
  });
  return { maintain, events };
}

describe("MaintainVectorIndex", () => {
  test("a catalogue under minRows is too small: no index, however quiet", async () => {
    const index = new FakeVectorIndex();
    index.write(999);
    const { maintain } = policyOn(index);
    expect(await maintain.check()).toBe("writes-under-way");
    expect(await maintain.check()).toBe("too-small");
    expect(await maintain.afterLoad()).toBe("too-small");
    expect(index.builds).toBe(0);
  });

  test("a large catalogue is built only at a look that finds no write since the previous one", async () => {
    const index = new FakeVectorIndex();
    const { maintain } = policyOn(index);
    index.write(600);
    expect(await maintain.check()).toBe("writes-under-way");
    index.write(600);
    expect(await maintain.check()).toBe("writes-under-way");
    expect(index.builds).toBe(0);
    expect(await maintain.check()).toBe("built");
    expect(index.builds).toBe(1);
    // Once built, every write keeps it: nothing more to do.
    index.write(10);
    expect(await maintain.check()).toBe("ready");
    expect(await maintain.check()).toBe("ready");
    expect(index.builds).toBe(1);
  });

  test("after a load the command knows is over, it builds at once", async () => {
    const index = new FakeVectorIndex();
    const { maintain } = policyOn(index);
    index.write(5000);
    expect(await maintain.afterLoad()).toBe("built");
    expect(index.builds).toBe(1);
  });

  test("an invalid index (a failed concurrent build) is built again at the next quiet look", async () => {
    const index = new FakeVectorIndex();
    index.write(2000);
    index.present = true;
    index.valid = false;
    const { maintain } = policyOn(index);
    expect(await maintain.check()).toBe("writes-under-way");
    expect(await maintain.check()).toBe("built");
    expect(index).toMatchObject({ present: true, valid: true, builds: 1 });
  });

  test("an index of another kind left beside a valid one (a switch cut short) is dropped by a build at the next quiet look", async () => {
    const index = new FakeVectorIndex();
    index.write(2000);
    index.present = index.valid = true;
    index.outdated = true;
    const { maintain } = policyOn(index);
    expect(await maintain.check()).toBe("writes-under-way");
    expect(await maintain.check()).toBe("built");
    expect(index).toMatchObject({ present: true, valid: true, outdated: false, builds: 1 });
    expect(await maintain.check()).toBe("ready");
  });

  test("off, none possible, or on demand only: the policy never builds", async () => {
    for (const [index, mode] of [
      [new FakeVectorIndex("automatic"), "off"],
      [new FakeVectorIndex("none"), "auto"],
      [new FakeVectorIndex("on-demand"), "auto"],
    ] as const) {
      index.write(5000);
      const { maintain } = policyOn(index, mode);
      expect(await maintain.afterLoad()).toBe("not-automatic");
      expect(await maintain.check()).toBe("not-automatic");
      expect(index.builds).toBe(0);
    }
  });

  test("one look at a time: a look while a build runs is busy, and another process's build too", async () => {
    const index = new FakeVectorIndex();
    index.write(5000);
    const { maintain } = policyOn(index);
    index.holdBuilds();
    const first = maintain.afterLoad();
    expect(await maintain.check()).toBe("busy");
    index.releaseBuilds();
    expect(await first).toBe("built");
    await maintain.settled();

    const elsewhere = new FakeVectorIndex();
    elsewhere.write(5000);
    elsewhere.lockedElsewhere = true;
    expect(await policyOn(elsewhere).maintain.afterLoad()).toBe("busy");
  });

  test("a database failure is logged and the next look tries again", async () => {
    const index = new FakeVectorIndex();
    index.write(5000);
    const { maintain, events } = policyOn(index);
    index.failNext = new Error("connection lost");
    expect(await maintain.afterLoad()).toBe("failed");
    expect(events).toEqual([
      { event: "vector_index_failed", error: expect.objectContaining({ message: "connection lost" }) },
    ]);
    expect(await maintain.afterLoad()).toBe("built");
  });
});

/** Catalogues each with a FakeVectorIndex; `remove` takes one away. */
function catalogueIndexes(names: string[]) {
  const indexes = new Map(names.map((name) => [name, new FakeVectorIndex()]));
  return {
    indexes,
    port: {
      catalogues: async () => [...indexes.keys()],
      of: async (name: string) => indexes.get(name),
    },
  };
}

describe("MaintainCatalogueIndexes", () => {
  test("each catalogue's index is built on its own: a large quiet one is built, a small one stays exact", async () => {
    const { indexes, port } = catalogueIndexes(["default", "grande", "pequeno"]);
    indexes.get("grande")?.write(5000);
    indexes.get("pequeno")?.write(200);
    const maintain = new MaintainCatalogueIndexes({ indexes: port, policy: { mode: "auto", minRows: 1000 } });
    // The first look only records each catalogue's writes so far.
    expect(Object.fromEntries(await maintain.check())).toEqual({
      default: "writes-under-way",
      grande: "writes-under-way",
      pequeno: "writes-under-way",
    });
    // A load into another catalogue does not hold this one's build back.
    indexes.get("pequeno")?.write(10);
    expect(Object.fromEntries(await maintain.check())).toEqual({
      default: "too-small",
      grande: "built",
      pequeno: "writes-under-way",
    });
    expect(indexes.get("grande")?.builds).toBe(1);
    expect(indexes.get("pequeno")?.builds).toBe(0);
  });

  test("after a load, only that catalogue's index is looked at; an unknown catalogue has none to build", async () => {
    const { indexes, port } = catalogueIndexes(["default", "grande"]);
    indexes.get("default")?.write(5000);
    indexes.get("grande")?.write(5000);
    const maintain = new MaintainCatalogueIndexes({ indexes: port, policy: { mode: "auto", minRows: 1000 } });
    expect(await maintain.afterLoad("grande")).toBe("built");
    expect(indexes.get("default")?.builds).toBe(0);
    expect(await maintain.afterLoad("otro")).toBe("not-automatic");
  });

  test("one look holds the upkeep lease for every catalogue; another instance holding it makes the look busy", async () => {
    const { indexes, port } = catalogueIndexes(["default", "grande"]);
    indexes.get("grande")?.write(5000);
    const held = { acquired: 0, released: 0, free: true };
    const lease = {
      acquire: async () => {
        if (!held.free) return false;
        held.acquired++;
        return true;
      },
      release: async () => {
        held.released++;
      },
    };
    const maintain = new MaintainCatalogueIndexes({ indexes: port, lease, policy: { mode: "auto", minRows: 1000 } });
    expect(await maintain.afterLoad("grande")).toBe("built");
    await maintain.check();
    expect(held).toEqual({ acquired: 2, released: 2, free: true });
    held.free = false;
    expect(await maintain.check()).toEqual(new Map());
    expect(await maintain.afterLoad("grande")).toBe("busy");
  });
});
