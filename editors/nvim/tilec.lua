-- tilec's language server for `.tile` files in Neovim 0.11 or newer.
--
-- Put this file on your runtimepath as lua/tilec.lua (or `dofile` it) and call
--   require('tilec').setup()                       -- `tilec` on the PATH
--   require('tilec').setup({ cmd = '/path/to/tilec' })
-- It registers the filetype `tile` for *.tile, and the server `tilec lsp` for it.
local M = {}

function M.setup(opts)
  opts = opts or {}
  vim.filetype.add({ extension = { tile = 'tile' } })
  vim.lsp.config('tilec', {
    cmd = { opts.cmd or 'tilec', 'lsp' },
    filetypes = { 'tile' },
    root_markers = { '.git' },
  })
  vim.lsp.enable('tilec')
  -- `//` comments for `gc`.
  vim.api.nvim_create_autocmd('FileType', {
    pattern = 'tile',
    callback = function(ev)
      vim.bo[ev.buf].commentstring = '// %s'
    end,
  })
end

return M
