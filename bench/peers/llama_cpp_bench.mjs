// llama.cpp on a GGUF file, timed as `hyc bench` times an artifact: a
// prompt of NPROMPT token ids evaluated in one call (prefill, up to the
// first generated token), then NGEN greedy tokens (decode), ROUNDS times
// in one process (the first round also warms the page cache; report the
// later ones). llama.cpp comes from node-llama-cpp's prebuilt library
// (the npm registry is reachable where GitHub is not):
//
//   mkdir peers && cd peers && npm i -E node-llama-cpp@3.21.1
//   cp bench/peers/llama_cpp_bench.mjs peers/   # imports resolve beside the file
//   node peers/llama_cpp_bench.mjs MODEL.gguf 512 64 3 [THREADS]
//
// MODEL.gguf from `hyc convert-gguf HF_DIR OUT.gguf --outtype q8_0|bf16`,
// so both engines read the same weights (bench/README.md, "hyc and
// llama.cpp on the same weights"). Flash attention on, batch 512, no GPU.
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, nPrompt, nGen, rounds, threads] = [
  process.argv[2], Number(process.argv[3] ?? 512), Number(process.argv[4] ?? 64),
  Number(process.argv[5] ?? 3), Number(process.argv[6] ?? 2)];
if (!modelPath || !(nPrompt > 0) || !(nGen > 0) || !(rounds > 0) || !(threads > 0)) {
  console.error("usage: node llama_cpp_bench.mjs MODEL.gguf [NPROMPT NGEN ROUNDS THREADS]");
  process.exit(2);
}
const llama = await getLlama({gpu: false, maxThreads: threads, logLevel: LlamaLogLevel.warn});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const context = await model.createContext({
  contextSize: nPrompt + nGen + 16, threads: {ideal: threads, min: threads},
  batchSize: 512, flashAttention: true});
console.log(`${modelPath}: llama.cpp (node-llama-cpp ${llama.buildType ?? ""} ` +
            `${llama.llamaCppRelease?.release ?? "?"}), ${threads} threads`);
for (let r = 0; r < rounds; ++r) {
  const seq = context.getSequence();
  // Ids below every vocabulary and above the usual special ids, a
  // different prompt each round (no cached prefix).
  const prompt = Array.from({length: nPrompt}, (_, i) => 3 + ((i * 7919 + r * 31) % 250));
  const t0 = performance.now();
  let t1 = 0, n = 0;
  for await (const _ of seq.evaluate(prompt, {temperature: 0})) {
    if (n === 0) t1 = performance.now();
    if (++n > nGen) break;
  }
  const t2 = performance.now();
  console.log(`round ${r + 1}/${rounds}: prefill ${(nPrompt / (t1 - t0) * 1000).toFixed(1)} ` +
              `tok/s, decode ${(nGen / (t2 - t1) * 1000).toFixed(2)} tok/s`);
  seq.dispose();
}
process.exit(0);
