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

// The names of items from a names file's text (the demo's --item_names): an id and a name a
// line, the separator the first of ::, TAB, comma, ; and | that splits the first lines alike,
// RFC 4180 quotes, a header when a field of the first line names the id or the name column
// (else the id is the first field and the name the second); ids as written, the first of a
// repeated id kept. A Map from id to name.
export function parseNames(text) {
  const lines = [];
  let field = '', fields = [], quoted = false, i = 0;
  const sep = ['::', '\t', ',', ';', '|'].find((s) => {
    const first = text.split(/\r\n|\n|\r/).filter(Boolean).slice(0, 16);
    return first.length && first.every((l) => l.split(s).length === first[0].split(s).length && l.includes(s));
  }) || ',';
  for (text = text.replace(/^\uFEFF/, ''); i <= text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') field += '"', i++;
      else if (c === '"') quoted = false;
      else if (c !== undefined) field += c;
    } else if (c === '"' && field.trim() === '') quoted = true, field = '';
    else if (text.startsWith(sep, i)) fields.push(field.trim()), field = '', i += sep.length - 1;
    else if (c === '\n' || c === '\r' || c === undefined) {
      if (c === '\r' && text[i + 1] === '\n') i++;
      fields.push(field.trim()), field = '';
      if (fields.length > 1 || fields[0] !== '') lines.push(fields);
      fields = [];
    } else field += c;
  }
  const norm = (s) => s.toLowerCase().replace(/[^a-z0-9]/g, '');
  const nameWords = /^(title|name|names|itemname|productname|moviename|artistname|bookname|booktitle|trackname|songname|animename|gamename|displayname|label|description)$/;
  const idWords = /^(item|itemid|items|iid|movieid|movie|isbn|asin|artistid|artist|productid|product|trackid|track|songid|song|bookid|book|businessid|business|sku|articleid|article|animeid|anime|gameid|game|videoid|video|contentid|courseid|recipeid|jokeid|placeid|poiid|objectid|docid|newsid|showid|podcastid|id)$/;
  let idCol = 0, nameCol = 1, header = false;
  if (lines.length) {
    const n = lines[0].map(norm), named = n.findIndex((w) => nameWords.test(w)), id = n.findIndex((w) => idWords.test(w) && w !== n[named]);
    if (named >= 0 || id >= 0) header = true, nameCol = named >= 0 ? named : 1, idCol = id >= 0 ? id : nameCol === 0 ? 1 : 0;
  }
  const names = new Map();
  for (const f of lines.slice(header ? 1 : 0))
    if (f.length > Math.max(idCol, nameCol) && !names.has(f[idCol])) names.set(f[idCol], f[nameCol]);
  return names;
}
