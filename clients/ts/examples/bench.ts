// SPDX-License-Identifier: BSD-3-Clause
// IDs/s through Client.next() from CALLERS concurrent async callers, after a warm-up of 0.3 s
// with the same callers (V8 compiles next() and the loop).
// usage: node dist/examples/bench.js SERVER CALLERS SECONDS [tuned|defaults|baseline]   (prints "ids_per_s N")
// tuned (the default): trusted, prefetch 4096, low water 1024; defaults: the library's;
// baseline: no client, an in-process counter behind the same await (one event loop: nothing
// is shared between threads), the ceiling of any hand-out.
import { Client } from "../src/index.js";

const [server, callers, seconds] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const mode = process.argv[5] ?? "tuned";
const c = await Client.create([server], mode === "tuned" ? { trusted: true, prefetch: 4096, lowWater: 1024 } : {});
await c.next();
let counter = 0n;
const baseline = async (): Promise<bigint> => counter++;
const next = mode === "baseline" ? baseline : () => c.next();

async function measure(secs: number): Promise<number> {
  const t0 = performance.now();
  const stop = t0 + secs * 1000;
  const counts = await Promise.all(Array.from({ length: callers }, async () => {
    let n = 0;
    while (performance.now() < stop) {
      for (let i = 0; i < 256; i++) await next();
      n += 256;
    }
    return n;
  }));
  return counts.reduce((a, b) => a + b, 0) / ((performance.now() - t0) / 1000);
}

await measure(0.3);
console.log(`ids_per_s ${Math.round(await measure(seconds))}`);
c.close();
