// Prints the provider table of @pydantic/genai-prices' built module (the
// array it starts with) as JSON. Run by `go run ./usage/refresh`.
import { readFileSync } from 'node:fs';
const src = readFileSync(process.argv[2], 'utf8');
const head = 'const E = [';
const start = src.indexOf(head);
const end = src.indexOf('\n], J = {', start);
if (start !== 0 || end < 0) {
  throw new Error('the provider table is not where this script looks: read the package and update dump.mjs');
}
const table = new Function('return ' + src.slice(head.length - 1, end + 2))();
process.stdout.write(JSON.stringify(table));
