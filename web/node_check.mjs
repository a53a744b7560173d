// node_check.mjs - runs ncf.wasm under Node's WASI and prints what the host build of
// ncf_web.c prints for the same model (make test compares the two): the model, the top 10
// of its first USERS users, and of a new user given by its first two items.
// Usage: node node_check.mjs ncf.wasm MODEL.ncf [USERS]
import { readFileSync } from 'node:fs';
import { WASI } from 'node:wasi';
import { loadNcf, parseNames } from './ncf.js';

const [wasmPath, modelPath, users = '16'] = process.argv.slice(2);
const wasi = new WASI({ version: 'preview1', args: [], env: {} });
const { instance, ncf } = await loadNcf(readFileSync(wasmPath), wasi.wasiImport);
wasi.initialize(instance);
const info = ncf.open(readFileSync(modelPath));
console.log(ncf.text);
if (info.error) process.exit(1);
for (let u = 0; u < Math.min(Number(users), info.users); u++) {
  ncf.recommend(u < info.user_ids.length ? info.user_ids[u] : ncf.userId(u), 10);
  console.log(ncf.text);
}
ncf.foldIn(info.item_ids.slice(0, 2), 10);
console.log(ncf.text);
// memory the module cannot give: an Error, and the model still serves (its answers are the
// host's, which make test compares)
let refused = false;
try { ncf.alloc(0xFFFFFFF0); } catch (e) { refused = /out of memory/.test(e.message); }
if (!refused) { console.log('web_alloc failed without an error'); process.exit(1); }
// names beside ids (the demo's --item_names): a header in any order, quotes, the first of a
// repeated id kept, ids as written
const names = parseNames('genre,name,anime_id\r\nAction,"Fist, of the North Star",51\nDrama,Clannad,52\n' +
  'X,"Third ""Quoted""",53\nDrama,Not this one,52\nDrama,Nor this,0054\n');
const want = [['51', 'Fist, of the North Star'], ['52', 'Clannad'], ['53', 'Third "Quoted"'], ['0054', 'Nor this']];
if (JSON.stringify([...names]) !== JSON.stringify(want) || parseNames('1|Toy Story (1995)|01-Jan-1995\n').get('1') !== 'Toy Story (1995)') {
  console.log('parseNames:', JSON.stringify([...names]));
  process.exit(1);
}
