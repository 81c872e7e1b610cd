-- Starting qwen-ls with Neovim's LSP client, one client per workspace root,
-- and attaching it to every normal buffer of that root.
local util = require('qwen.util')
local config = require('qwen.config')
local paths = require('qwen.paths')

local M = {}

M.by_root = {} -- root -> client id
local ready = {} -- client id -> true once initialized
local queued = {} -- client id -> functions waiting for initialization

local function dirname(p)
  return vim.fn.fnamemodify(p, ':h')
end

local function inside(path, root)
  return paths.inside(path, root)
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
  -- The agent's code intelligence, from the buffer's other language
  -- servers (qwen/lsp.lua).
  h['qwen/lsp'] = function(_, params, ctx)
    return require('qwen.lsp').on_request(params, ctx.client_id)
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
    -- qwen/lsp: definitions, references, diagnostics... from the other
    -- language servers attached to a buffer.
    lsp = true,
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
    workspace_folders = { { uri = paths.to_uri(root), name = root } },
    capabilities = capabilities(),
    init_options = init_options(),
    handlers = handlers(),
    -- The server keeps an overlay of unsaved buffers: send every change at
    -- once, so a prompt never races a pending didChange.
    flags = { debounce_text_changes = 0 },
    on_init = function(client, result)
      ready[client.id] = true
      M.on_model(type(result) == 'table' and result.capabilities or client.server_capabilities)
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

--- The approval modes the server offers: experimental.qwen.approvalModes
--- of client c's initialize result (c defaults to the chat's client, else
--- the current buffer's running one), or the old fixed list for a server
--- that sends none.
function M.approval_modes(c)
  local chat = require('qwen.session').client_id
  c = c or (chat and vim.lsp.get_client_by_id(chat)) or M.current(false)
  local e = c and type(c.server_capabilities) == 'table' and c.server_capabilities.experimental
  local modes = type(e) == 'table' and type(e.qwen) == 'table' and e.qwen.approvalModes
  if type(modes) == 'table' and #modes > 0 and #vim.tbl_filter(function(m) return type(m) == 'string' end, modes) == #modes then
    return modes
  end
  return { 'default', 'plan', 'auto-edit', 'yolo' }
end

local told_setup = {} -- setup reasons told in this Neovim session

--- The model the server starts with (experimental.qwen.model of the
--- initialize result). null means none can be used, and
--- experimental.qwen.setup says why: nothing configured ("no model"), or
--- what a configured model lacks, which the statusline names in this
--- plugin's terms and one notification explains.
function M.on_model(caps)
  local q = type(caps) == 'table' and type(caps.experimental) == 'table' and caps.experimental.qwen or nil
  if type(q) ~= 'table' then
    return
  end
  local status = require('qwen.status')
  -- Neovim's LSP client reads a JSON null inside an object as nil.
  if q.model == nil or q.model == vim.NIL then
    -- A server too old to say why: nothing configured, as it meant then.
    local setup = type(q.setup) == 'table' and q.setup or { reason = 'no_model' }
    status.set_setup(setup)
    local reason = type(setup.reason) == 'string' and setup.reason or 'no_model'
    if told_setup[reason] then
      return
    end
    told_setup[reason] = true
    if reason == 'no_model' then
      util.notify_fit('no model is configured: set model.name and model.baseUrl (setup{ model = ... } or ~/.qwen/settings.json), or OPENAI_MODEL, OPENAI_BASE_URL and OPENAI_API_KEY; :checkhealth qwen',
        'no model configured: see :checkhealth qwen', vim.log.levels.WARN)
    else
      local what = status.missing(setup) or reason
      local hint = require('qwen.chat').setup_hint(setup)
      util.notify_fit('the model cannot be used yet: ' .. what .. (hint and ('. To fix it: ' .. hint) or '') .. '; :checkhealth qwen',
        what .. '; see :checkhealth qwen', vim.log.levels.WARN)
    end
  elseif type(q.model) == 'string' then
    status.set_setup(nil)
    -- The server's default; the chat's session may choose another.
    if not status.model then
      status.set({ model = q.model })
    end
  end
end

M.not_found = false -- the command is not executable: tried and told once

--- The command that starts the server: the cmd option with its program
--- found (paths.find_program: on PATH, else where `go install` puts it;
--- qwen-ls.exe on Windows), or nil and the program's name.
function M.server_cmd(cmd)
  local name = type(cmd) == 'table' and cmd[1] or nil
  local full = paths.find_program(name)
  if not full then
    return nil, name
  end
  local out = vim.deepcopy(cmd)
  out[1] = full
  return out, name
end

--- The server command, or nil (after telling once per Neovim session) when
--- it cannot run.
local function runnable(cmd)
  local found, exe = M.server_cmd(cmd)
  if found then
    return found
  end
  if not M.not_found then
    M.not_found = true
    require('qwen.status').set({ not_found = true })
    -- One line that fits, scheduled: no hit-enter prompt in the middle of
    -- opening a file.
    vim.schedule(function()
      util.notify_fit(string.format('%s not found: install it (go install github.com/qwen-ls/qwen-ls/cmd/qwen-ls@latest) or set cmd in require("qwen").setup{ cmd = { "/path/to/qwen-ls", "--stdio" } }', tostring(exe)),
        'qwen-ls not found: go install it, or setup{ cmd = ... }', vim.log.levels.ERROR)
    end)
  end
  return nil
end

--- Forgets a missing command (setup{} was called again, maybe with another).
function M.reset()
  M.not_found = false
  require('qwen.status').set({ not_found = false })
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
  local cmd = not M.not_found and runnable(config.options.cmd)
  if not cmd then
    return nil
  end
  local cfg = client_config(root)
  cfg.cmd = cmd
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
