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
  chat = {
    -- 'right', 'left', 'below', 'above' or 'tab'
    position = 'right',
    width = 70,
    height = 15,
    input_height = 4,
  },
  keymaps = {
    -- In the chat's input buffer.
    submit = '<C-s>',
    -- In the chat buffer: expand or collapse the tool call under the cursor.
    toggle_tool = '<CR>',
    -- In a buffer under review.
    accept_hunk = 'ca',
    reject_hunk = 'cr',
    accept_all = 'cA',
    reject_all = 'cR',
    next_hunk = ']h',
    prev_hunk = '[h',
    edit_proposal = 'ce',
    reject_with_feedback = 'cf',
    close_review = 'cq',
  },
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  return M.options
end

return M
