// SPDX-License-Identifier: BSD-3-Clause
// The TypeScript caller of scripts/drill.sh (issue 49): one Client of
// clients/ts (the public API, compiled by tests/clients/ts.sh) shared by two
// async loops on one event loop, one awaiting next() and one get() (one round
// trip), each at a fixed rate for a bounded time, one line per call on
// stdout: WALL_S MODE LATENCY_US ok|err [MESSAGE]. WALL_S is the call's start
// (Unix seconds). A call late on its slot does not make up the missed ones.
// usage: node drill.mjs CLIENT_INDEX_JS SERVERS RATE SECONDS TIMEOUT_MS (0: the client's default)
import { pathToFileURL } from "node:url";

const [index, list, rateS, secsS, tmoS] = process.argv.slice(2);
const rate = Number(rateS), secs = Number(secsS), tmo = Number(tmoS);
if (!index || !list || !(rate >= 1 && rate <= 10000) || !(secs >= 1 && secs <= 600) || !(tmo >= 0)) {
  console.error("usage: node drill.mjs CLIENT_INDEX_JS SERVERS RATE SECONDS TIMEOUT_MS");
  process.exit(2);
}
const { Client } = await import(pathToFileURL(index).href);
const c = await Client.create(list.split(","), tmo > 0 ? { timeoutMs: tmo } : {});
const lines = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function run(name, call) {
  const period = 1000 / rate;
  const start = performance.now();
  let slot = start;
  const maxCalls = Math.floor(rate * secs) + 1;
  for (let i = 0; i < maxCalls && performance.now() - start < secs * 1000; i++) {
    const d = slot - performance.now();
    if (d > 0) await sleep(d);
    const w = (performance.timeOrigin + performance.now()) / 1000;
    const t0 = performance.now();
    let res = "ok";
    try {
      await call();
    } catch (e) {
      res = "err " + String(e?.message ?? e).replace(/\n/g, " ");
    }
    const lat = Math.round((performance.now() - t0) * 1000);
    lines.push(`${w.toFixed(6)} ${name} ${lat} ${res}\n`);
    slot += period;
    const now = performance.now();
    if (slot < now) slot = now;
  }
}

await Promise.all([run("next", () => c.next()), run("get", () => c.get())]);
process.stdout.write(lines.join(""));
c.close();
