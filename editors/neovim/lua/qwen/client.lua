-- Starting qwen-ls with Neovim's LSP client, one client per workspace root,
-- and attaching it to every normal buffer of that root.
local util = require('qwen.util')
local config = require('qwen.config')

local M = {}

M.by_root = {} -- root -> client id
local ready = {} -- client id -> true once initialized
local queued = {} -- client id -> functions waiting for initialization

local function dirname(p)
  return vim.fn.fnamemodify(p, ':h')
end

local function inside(path, root)
  return path == root or path:sub(1, #root + 1) == root .. '/'
end

local function realpath(p)
  return vim.loop.fs_realpath(p) or p
end

--- The workspace root of a file: the nearest folder upwards holding one of
--- the root markers, else the current directory when it holds the file,
--- else the file's own folder.
function M.root_for(path)
  path = realpath(vim.fn.fnamemodify(path, ':p'))
  local dir = vim.fn.isdirectory(path) == 1 and path or dirname(path)
  local cwd = realpath(vim.fn.getcwd())
  while true do
    for _, marker in ipairs(config.options.root_markers or {}) do
      if vim.loop.fs_stat(dir .. '/' .. marker) then
        return dir
      end
    end
    local parent = dirname(dir)
    if parent == dir then
      break
    end
    dir = parent
  end
  if inside(path, cwd) then
    return cwd
  end
  return vim.fn.isdirectory(path) == 1 and path or dirname(path)
end

local function handlers()
  local h = {}
  h['qwen/sessionUpdate'] = function(_, params, ctx)
    require('qwen.session').on_update(params, ctx.client_id)
  end
  h['qwen/proposeEdit'] = function(_, params, ctx)
    return require('qwen.review').on_propose(params, ctx.client_id)
  end
  h['qwen/requestPermission'] = function(_, params, ctx)
    return require('qwen.permission').on_request(params, ctx.client_id)
  end
  h['qwen/reviewCancelled'] = function(_, params, ctx)
    require('qwen.review').on_cancelled(params, ctx.client_id)
    require('qwen.permission').on_cancelled(params, ctx.client_id)
  end
  h['workspace/applyEdit'] = function(err, params, ctx, cfg)
    -- Neovim 0.7 prints the label of every workspace edit; the chat
    -- already says what happened.
    if type(params) == 'table' and params.label then
      params = vim.tbl_extend('force', {}, params)
      params.label = nil
    end
    return vim.lsp.handlers['workspace/applyEdit'](err, params, ctx, cfg)
  end
  h['$/progress'] = function(err, result, ctx, cfg)
    local default = vim.lsp.handlers['$/progress']
    if default then
      pcall(default, err, result, ctx, cfg)
    end
    local v = type(result) == 'table' and result.value or nil
    if type(v) == 'table' then
      if v.kind == 'end' then
        require('qwen.status').set({ progress = vim.NIL })
      else
        require('qwen.status').set({ progress = v.message or vim.NIL })
      end
    end
  end
  return h
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  caps.experimental = caps.experimental or {}
  caps.experimental.qwen = {
    sessionUpdates = true,
    requestPermission = true,
    proposeEdit = true,
    -- Neovim 0.7 must answer server requests at once, so every version
    -- answers reviews "deferred" and sends the decision later (one path).
    deferredReview = true,
  }
  caps.window = caps.window or {}
  caps.window.workDoneProgress = true
  return caps
end

local function init_options()
  local o = config.options
  local io = vim.empty_dict()
  if o.approval_mode then
    io.approvalMode = o.approval_mode
  end
  if type(o.model) == 'string' then
    io.model = { name = o.model }
  elseif type(o.model) == 'table' then
    io.model = o.model
  end
  if o.settings then
    io.settings = o.settings
  end
  return io
end

local function client_config(root)
  local o = config.options
  return {
    name = 'qwen',
    cmd = o.cmd,
    cmd_env = o.cmd_env,
    root_dir = root,
    workspace_folders = { { uri = vim.uri_from_fname(root), name = root } },
    capabilities = capabilities(),
    init_options = init_options(),
    handlers = handlers(),
    -- The server keeps an overlay of unsaved buffers: send every change at
    -- once, so a prompt never races a pending didChange.
    flags = { debounce_text_changes = 0 },
    on_init = function(client)
      ready[client.id] = true
      local fns = queued[client.id] or {}
      queued[client.id] = nil
      for _, fn in ipairs(fns) do
        fn(client)
      end
    end,
    on_exit = function(code, signal, client_id)
      ready[client_id] = nil
      queued[client_id] = nil
      for r, id in pairs(M.by_root) do
        if id == client_id then
          M.by_root[r] = nil
        end
      end
      vim.schedule(function()
        require('qwen.session').on_exit(client_id, code, signal)
        require('qwen.review').on_exit(client_id)
        require('qwen.permission').on_exit(client_id)
      end)
    end,
  }
end

local function live(id)
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- Returns the client of a root, starting it (and attaching buf, if given).
function M.ensure(root, buf)
  local c = live(M.by_root[root])
  if c then
    if buf and not vim.lsp.buf_is_attached(buf, c.id) then
      vim.lsp.buf_attach_client(buf, c.id)
    end
    return c
  end
  local cfg = client_config(root)
  local id
  if util.has08 and buf then
    id = vim.lsp.start(cfg, { bufnr = buf })
  elseif util.has011 then
    id = vim.lsp.start(cfg, { attach = false })
  else
    id = vim.lsp.start_client(cfg)
    if id and buf then
      vim.lsp.buf_attach_client(buf, id)
    end
  end
  if not id then
    util.notify_user('could not start ' .. table.concat(cfg.cmd, ' ') .. '; is qwen-ls on your PATH? See :checkhealth qwen', vim.log.levels.ERROR)
    return nil
  end
  M.by_root[root] = id
  return live(id)
end

--- Attaches a buffer to its root's client when it is a normal file buffer.
function M.attach(buf)
  local name = util.file_name(buf)
  if name then
    M.ensure(M.root_for(name), buf)
  end
end

--- The client for the current context: the current buffer's root when it
--- is a file, else the current directory's.
function M.current(start)
  local buf = vim.api.nvim_get_current_buf()
  local root = M.root_for(util.file_name(buf) or vim.fn.getcwd())
  local c = live(M.by_root[root])
  if c or not start then
    return c, root
  end
  return M.ensure(root), root
end

--- Runs fn(client) once the client has answered initialize.
function M.when_ready(client, fn)
  if ready[client.id] then
    fn(client)
  else
    queued[client.id] = queued[client.id] or {}
    table.insert(queued[client.id], fn)
  end
end

function M.is_ready(id)
  return ready[id] == true
end

return M
