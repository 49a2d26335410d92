-- Drives `tilec lsp` from a real editor: headless Neovim 0.11 opens a copy of an example with
-- an injected mistake, waits for the diagnostics, checks message and position, hovers a tile
-- and an array parameter, jumps to a definition and to a built-in's docs, completes
-- constructors and methods, then fixes the mistake and sees the diagnostics go.
-- Usage: nvim --headless --clean -l nvim_lsp.lua TILEC REPO_ROOT WORK_DIR
local tilec, root, work = arg[1], arg[2], arg[3]

local failures = 0
local function check(ok, what)
  if not ok then
    io.stderr:write('FAIL: ' .. what .. '\n')
    failures = failures + 1
  else
    io.stdout:write('ok: ' .. what .. '\n')
  end
end

dofile(root .. '/editors/nvim/tilec.lua').setup({ cmd = tilec })

-- The example with a misspelt variable on the line that stores the result.
local src = io.open(root .. '/examples/gemm.tile'):read('a')
local bad, n = src:gsub('C%[', 'Cx[', 1)
assert(n == 1, 'examples/gemm.tile has no store into C')
local path = work .. '/gemm_mistake.tile'
local f = io.open(path, 'w')
f:write(bad)
f:close()

vim.cmd('edit ' .. path)
local buf = vim.api.nvim_get_current_buf()
check(vim.bo[buf].filetype == 'tile', 'the filetype is tile')
check(vim.wait(20000, function() return #vim.lsp.get_clients({ bufnr = buf }) > 0 end), 'the server attached')

local diags = {}
check(vim.wait(20000, function()
  diags = vim.diagnostic.get(buf)
  return #diags > 0
end), 'diagnostics arrived')
local want_line
for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
  if l:find('Cx%[') and not want_line then
    want_line = i - 1
  end
end
local d = diags[1] or {}
check(d.code == 'E0101', 'the code is E0101, got ' .. tostring(d.code))
check((d.message or ''):find('cannot find `Cx`') ~= nil, 'the message names Cx: ' .. tostring(d.message))
check(d.lnum == want_line, 'the line is ' .. tostring(want_line) .. ', got ' .. tostring(d.lnum))
local col = vim.api.nvim_buf_get_lines(buf, want_line, want_line + 1, false)[1]:find('Cx%[') - 1
check(d.col == col, 'the column is ' .. col .. ', got ' .. tostring(d.col))

-- Hover on the accumulator `acc` where it is defined: its tile type and registers.
local function pos_of(pattern)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    local c = l:find(pattern)
    if c then
      return { line = i - 1, character = c - 1 }
    end
  end
end
local function request(method, pos)
  local params = { textDocument = vim.lsp.util.make_text_document_params(buf), position = pos }
  local res = vim.lsp.buf_request_sync(buf, method, params, 10000) or {}
  for _, r in pairs(res) do
    if r.result then
      return r.result
    end
  end
end
local acc = pos_of('let acc')
acc.character = acc.character + 4
local h = request('textDocument/hover', acc)
local text = h and h.contents and h.contents.value or ''
check(text:find('tile<f32') ~= nil or text:find('tile<f64') ~= nil, 'hover shows the tile type: ' .. text)
check(text:find('registers per lane') ~= nil, 'hover shows registers per lane')

-- Definition of a use of `acc` jumps to its `let`.
local use = pos_of('acc %+=')
local def = request('textDocument/definition', use)
local loc = def and (def.range and def or def[1])
check(loc ~= nil and loc.range.start.line == acc.line, 'definition of acc is its let on line ' .. acc.line)

-- Definition of a built-in opens its entry in docs/language.md.
local pid = pos_of('program_id%(0%)')
def = request('textDocument/definition', pid)
loc = def and (def.range and def or def[1])
local doc_line = ''
if loc and loc.uri:match('language%.md$') then
  local lines = vim.fn.readfile(vim.uri_to_fname(loc.uri))
  doc_line = lines[loc.range.start.line + 1] or ''
end
check(doc_line:find('`program_id%(a%)`') ~= nil, 'definition of program_id is its row of language.md: ' .. doc_line)

-- Hover on an array parameter shows its shape symbols.
local param = pos_of('%(A: T%[M, K%]')
param.character = param.character + 1
h = request('textDocument/hover', param)
text = h and h.contents and h.contents.value or ''
check(text:find('`f32%[M, K%]` / `f64%[M, K%]`') ~= nil and text:find('%?') == nil, 'hover on A shows f32[M, K]: ' .. text)

-- Completion: constructors after `tile<..>::` include iota; a 16x16 float tile gets the
-- matrix methods, a 1-D one only eye_.
local function labels_at(line_text)
  local zero = pos_of('let acc = tile')
  vim.api.nvim_buf_set_lines(buf, zero.line + 1, zero.line + 1, false, { line_text })
  local res = request('textDocument/completion', { line = zero.line + 1, character = #line_text })
  vim.api.nvim_buf_set_lines(buf, zero.line + 1, zero.line + 2, false, {})
  local items = res and (res.items or res) or {}
  local out = {}
  for _, it in ipairs(items) do
    out[#out + 1] = it.label
  end
  return table.concat(out, ',')
end
local ctors = labels_at('    let io = tile<i32, 16>::')
check(ctors == 'zeros,eye,full,iota', 'constructors after tile<..>:: are zeros,eye,full,iota: ' .. ctors)
local methods = labels_at('    acc.')
check(methods:find('cholesky_') ~= nil and methods:find('solve_left_lower_') ~= nil, 'acc. offers the matrix methods')
local scalar = labels_at('    i0.')
check(scalar == '', 'a scalar receiver gets no methods: ' .. scalar)

-- Fixing the mistake clears the diagnostics.
vim.api.nvim_buf_set_lines(buf, 0, -1, false, vim.split(src, '\n', { plain = true }))
check(vim.wait(20000, function() return #vim.diagnostic.get(buf) == 0 end), 'the fix clears the diagnostics')

for _, c in ipairs(vim.lsp.get_clients()) do
  c:stop()
end
os.exit(failures == 0 and 0 or 1)
