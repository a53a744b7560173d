// ncf.js - the page's (and Node's) handle on ncf.wasm: instantiate, open a model file, ask.
// No framework. The module is a WASI reactor that only formats text in memory: the few WASI
// calls its C library links (fd_write and friends) are never reached, and answer "not
// supported" here; under Node the test passes node:wasi's imports instead.

export async function loadNcf(wasmBytes, wasiImports) {
  const module = await WebAssembly.compile(wasmBytes);
  const stubs = {};
  for (const imp of WebAssembly.Module.imports(module))
    if (imp.module === 'wasi_snapshot_preview1')
      stubs[imp.name] = imp.name === 'proc_exit' ? (code) => { throw new Error('wasm exit ' + code); } : () => 52; // ENOSYS
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasiImports || stubs });
  const x = instance.exports;
  if (x._initialize && !wasiImports) x._initialize();
  return { instance, module, ncf: new Ncf(x) };
}

export class Ncf {
  constructor(exports) { this.x = exports; }

  // n bytes of the module's memory, or an Error: never a write through a failed allocation
  alloc(n) {
    const p = this.x.web_alloc(n);
    if (!p) throw new Error(`ncf.wasm: out of memory for ${n} bytes`);
    return p;
  }

  // a JS string as NUL-terminated UTF-8 in the module's memory (the caller frees it)
  cString(s) {
    const bytes = new TextEncoder().encode(s);
    const p = this.alloc(bytes.length + 1);
    const mem = new Uint8Array(this.x.memory.buffer, p, bytes.length + 1);
    mem.set(bytes), (mem[bytes.length] = 0);
    return p;
  }

  // the NUL-terminated text the module wrote at p
  textAt(p) {
    const mem = new Uint8Array(this.x.memory.buffer);
    let end = p;
    while (mem[end]) end++;
    return new TextDecoder().decode(mem.subarray(p, end));
  }

  // the JSON text the module wrote at p, parsed (this.text keeps it as written)
  json(p) {
    this.text = this.textAt(p);
    return JSON.parse(this.text);
  }

  // a model file's bytes (an ArrayBuffer or Uint8Array), read in place inside the module; the
  // model open before is closed first, so its memory serves the new one
  open(fileBytes) {
    const bytes = fileBytes instanceof Uint8Array ? fileBytes : new Uint8Array(fileBytes);
    this.x.web_close();
    const p = this.alloc(bytes.length);
    new Uint8Array(this.x.memory.buffer, p, bytes.length).set(bytes);
    return this.json(this.x.web_open(p, bytes.length)); // (the module owns p from here)
  }

  // user index u's id
  userId(u) {
    return this.textAt(this.x.web_user_id(u));
  }

  recommend(user, k = 10) {
    const s = this.cString(String(user));
    const r = this.json(this.x.web_recommend(s, k));
    this.x.web_free(s);
    return r;
  }

  foldIn(itemIds, k = 10) {
    const s = this.cString(itemIds.join('\n'));
    const r = this.json(this.x.web_fold_in(s, k));
    this.x.web_free(s);
    return r;
  }
}
