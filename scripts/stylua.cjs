// Formats or checks the plugin's Lua with StyLua (the WASM build from npm,
// @johnnymorganz/stylua, installed by scripts/lint-lua.sh): 2 spaces, 120
// columns. Usage: node scripts/stylua.cjs [--write] FILE...
// Exits 1 and names the files that need formatting when checking.
const fs = require("fs");
const path = require("path");
const lib = path.join(__dirname, "..", ".cache", "stylua", "node_modules", "@johnnymorganz", "stylua", "stylua_lib_node.cjs");
const s = require(lib);

function config() {
  // formatCode consumes its Config: one per file.
  const c = s.Config.new();
  c.column_width = 120;
  c.indent_type = s.IndentType.Spaces;
  c.indent_width = 2;
  return c;
}

const args = process.argv.slice(2);
const write = args[0] === "--write";
let bad = 0;
for (const f of write ? args.slice(1) : args) {
  const src = fs.readFileSync(f, "utf8");
  let out;
  try {
    out = s.formatCode(src, config(), undefined, s.OutputVerification.None);
  } catch (e) {
    console.error(`${f}: ${e.message}`);
    bad++;
    continue;
  }
  if (out === src) continue;
  if (write) {
    fs.writeFileSync(f, out);
    console.log(`formatted ${f}`);
  } else {
    console.error(`${f} needs formatting (node scripts/stylua.cjs --write ${f})`);
    bad++;
  }
}
process.exit(bad ? 1 : 0);
