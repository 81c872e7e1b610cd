-- The plugin's options and their defaults (see :help qwen-options).
local M = {}

M.defaults = {
  -- How to start the server. Needs qwen-ls on PATH by default.
  cmd = { 'qwen-ls', '--stdio' },
  -- Extra environment for the server (an API key belongs here or in the
  -- environment Neovim was started with, never in the settings).
  cmd_env = nil,
  -- The initial approval mode of new sessions: nil (the server's setting),
  -- 'plan', 'default', 'auto-edit' or 'yolo'.
  approval_mode = nil,
  -- The model: a name ('qwen3-coder-plus') or { name = ..., baseUrl = ... }.
  -- nil leaves it to the server's settings and environment.
  model = nil,
  -- Extra settings.json keys passed as initializationOptions.settings.
  settings = nil,
  -- Files that mark a workspace root, searched upwards from a buffer's file.
  -- Without one, the current directory is the root when it holds the file.
  root_markers = { '.qwen', '.git' },
  -- Start the server and attach it to every normal buffer of the workspace.
  autostart = true,
  -- What require('qwen').statusline() adds after the state and mode: the
  -- chat session's model, and its token totals (input/output).
  statusline = {
    model = true,
    tokens = false,
  },
  chat = {
    -- 'right', 'left', 'below', 'above' or 'tab'
    position = 'right',
    width = 70,
    height = 15,
    input_height = 4,
  },
  -- Keys (see :help qwen-keys). Each review action is also a <Plug>
  -- mapping, <Plug>(qwen-accept-hunk) and so on, for your own keys; set a
  -- key to false to leave it unmapped. No default starts with an operator
  -- (c, d, y, g...): <localleader> is \ unless you set maplocalleader.
  keys = {
    -- In the chat's input buffer: send the prompt; complete the command
    -- chosen in the "/" popup (the first one when none is chosen).
    submit = '<C-s>',
    complete = '<Tab>',
    -- In the chat buffer: expand or collapse the tool call under the
    -- cursor, or open the review named on that line.
    toggle_tool = '<CR>',
    -- In a buffer under review (buffer-local while the review is open).
    next_hunk = ']h',
    prev_hunk = '[h',
    accept_hunk = '<localleader>a',
    reject_hunk = '<localleader>r',
    accept_all = '<localleader>A',
    reject_all = '<localleader>R',
    edit_proposal = '<localleader>e',
    reject_with_feedback = '<localleader>f',
    close_review = '<localleader>q',
  },
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  opts = vim.deepcopy(opts or {})
  -- `keymaps` is the option's old name.
  if type(opts.keymaps) == 'table' then
    opts.keys = vim.tbl_extend('force', opts.keymaps, opts.keys or {})
  end
  opts.keymaps = nil
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts)
  M.options.keymaps = M.options.keys
  return M.options
end

return M
