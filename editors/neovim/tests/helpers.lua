-- Helpers for the plugin's end-to-end tests: a fresh copy of the shared
-- workspace, a temporary HOME, the real qwen-ls and the scripted model
-- (qwen-scripted-model).
local H = {}

H.repo = os.getenv('QWEN_TEST_REPO')
H.bin = os.getenv('QWEN_TEST_BIN')
H.model_bin = os.getenv('QWEN_SCRIPTED_MODEL_BIN')
H.nvim = os.getenv('QWEN_TEST_NVIM') or 'nvim'
H.plugin = H.repo .. '/editors/neovim'
H.scripts = H.repo .. '/testdata/scripts'

local cleanups = {}

function H.defer(fn)
  table.insert(cleanups, fn)
end

function H.log(...)
  io.stdout:write('    ' .. table.concat(vim.tbl_map(tostring, { ... }), ' ') .. '\n')
end

--- Waits for cond (an event), failing the test after ms.
function H.wait(ms, cond, what)
  local ok = vim.wait(ms, cond, 10)
  if not ok then
    error('timed out after ' .. ms .. ' ms waiting for ' .. what, 2)
  end
end

--- Skips the current case, saying why (a tool it needs is not installed
--- here; CI installs every one).
function H.skip(why)
  error({ skip = why }, 0)
end

--- The gopls to attach to buffers: $QWEN_TEST_GOPLS, else the one on
--- PATH, else nil.
function H.gopls()
  local p = os.getenv('QWEN_TEST_GOPLS')
  if p and p ~= '' and vim.fn.executable(p) == 1 then
    return p
  end
  p = vim.fn.exepath('gopls')
  return p ~= '' and p or nil
end

function H.eq(want, got, what)
  if not vim.deep_equal(want, got) then
    error(string.format('%s:\n  want %s\n  got  %s', what or 'values differ', vim.inspect(want), vim.inspect(got)), 2)
  end
end

function H.ok(v, what)
  if not v then
    error('expected ' .. (what or 'a true value'), 2)
  end
  return v
end

function H.contains(hay, needle, what)
  if type(hay) == 'table' then
    hay = table.concat(hay, '\n')
  end
  if not hay:find(needle, 1, true) then
    error(string.format('%s: %q not found in:\n%s', what or 'missing text', needle, hay), 2)
  end
end

function H.read(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local s = f:read('*a')
  f:close()
  return s
end

function H.exists(path)
  return vim.loop.fs_stat(path) ~= nil
end

function H.sh(cmd)
  local out = vim.fn.system(cmd)
  if vim.v.shell_error ~= 0 then
    error('command failed: ' .. vim.inspect(cmd) .. ': ' .. out, 2)
  end
  return out
end

--- A fresh copy of testdata/workspace and a temporary HOME.
function H.workspace()
  local tmp = vim.fn.tempname()
  vim.fn.mkdir(tmp, 'p')
  H.sh({ 'cp', '-R', H.repo .. '/testdata/workspace', tmp .. '/ws' })
  vim.fn.mkdir(tmp .. '/home', 'p')
  local ws = vim.loop.fs_realpath(tmp .. '/ws')
  H.defer(function()
    vim.fn.delete(tmp, 'rf')
  end)
  H.ws, H.home = ws, tmp .. '/home'
  return ws, H.home
end

--- Names the workspace in the temporary HOME's trust list, as
--- `qwen-ls trust` does, so the folder's settings and project rules apply.
function H.trust()
  vim.fn.mkdir(H.home .. '/.qwen', 'p')
  local f = assert(io.open(H.home .. '/.qwen/trustedFolders.json', 'w'))
  f:write(vim.json.encode({ [H.ws] = 'TRUST_FOLDER' }))
  f:close()
end

--- Starts `qwen-scripted-model` with a script of testdata/scripts.
function H.model(script)
  local m = { lines = {} }
  local args = { H.model_bin, '--var', 'ROOT=' .. H.ws }
  if script then
    table.insert(args, '--script')
    -- a name of testdata/scripts, or a path
    table.insert(args, script:sub(1, 1) == '/' and script or (H.scripts .. '/' .. script))
  end
  m.job = vim.fn.jobstart(args, {
    on_stdout = function(_, data)
      for _, l in ipairs(data) do
        if l ~= '' and not m.url then
          m.url = l
        end
      end
    end,
    on_exit = function()
      m.exited = true
    end,
  })
  H.ok(m.job > 0, 'the scripted model to start')
  H.wait(10000, function()
    return m.url ~= nil
  end, 'the scripted model URL')
  H.model_base = m.url:gsub('/v1$', '')
  H.defer(function()
    vim.fn.jobstop(m.job)
    vim.wait(3000, function()
      return m.exited
    end, 10)
  end)
  H.current_model = m
  return m
end

--- Writes a script (txtar text) to a temporary file and returns its path,
--- for H.model.
function H.script(text)
  local path = vim.fn.tempname() .. '.txtar'
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
  H.defer(function()
    os.remove(path)
  end)
  return path
end

--- Writes the temporary HOME's ~/.qwen/settings.json.
function H.user_settings(tbl)
  vim.fn.mkdir(H.home .. '/.qwen', 'p')
  local f = assert(io.open(H.home .. '/.qwen/settings.json', 'w'))
  f:write(vim.json.encode(tbl))
  f:close()
end

--- Every chat request the model received.
function H.requests()
  local out = H.sh({ 'curl', '-sS', '--max-time', '5', H.model_base .. '/_control/requests' })
  return vim.json.decode(out)
end

--- The tool result the model was sent for a tool call id.
function H.tool_result(call_id)
  for _, req in ipairs(H.requests()) do
    for _, msg in ipairs(req.messages or {}) do
      if msg.role == 'tool' and msg.tool_call_id == call_id then
        return msg.content
      end
    end
  end
end

--- Loads the plugin from this checkout and sets it up against the model.
function H.setup(opts)
  vim.opt.runtimepath:prepend(H.plugin)
  vim.cmd('runtime plugin/qwen.lua')
  vim.cmd('cd ' .. vim.fn.fnameescape(H.ws))
  local env = {
    HOME = H.home,
    OPENAI_BASE_URL = H.current_model and H.current_model.url or nil,
    OPENAI_MODEL = 'scripted',
    OPENAI_API_KEY = 'sk-test',
  }
  local o = vim.tbl_deep_extend('force', { cmd = { H.bin, '--stdio' }, cmd_env = env }, opts or {})
  return require('qwen').setup(o)
end

--- The usual start of a case: a fresh workspace, the scripted model playing
--- a script of testdata/scripts, the plugin set up, and a file of the
--- workspace open with its client ready. Returns the workspace's path.
function H.start(script, file)
  local ws = H.workspace()
  H.model(script)
  H.setup()
  vim.cmd('edit ' .. file)
  H.wait_client()
  return ws
end

function H.client()
  return require('qwen.client').current(false)
end

--- Waits for the client of the workspace to be initialized.
function H.wait_client()
  local client_mod = require('qwen.client')
  local c
  H.wait(10000, function()
    c = client_mod.current(false)
    return c and client_mod.is_ready(c.id)
  end, 'qwen-ls to initialize')
  return c
end

--- Waits for the current turn to end and returns the prompt's result.
function H.wait_turn(ms)
  local s = require('qwen.session')
  H.wait(ms or 15000, function()
    return not s.busy and s.last_stop ~= nil
  end, 'the turn to end')
  return s.last_stop
end

function H.chat_lines()
  return require('qwen.chat').lines()
end

--- Stops qwen-ls and loads the chat's session in a new one, as after
--- restarting Neovim: the chat then shows the session's replay.
function H.reload()
  local session = require('qwen.session')
  local util = require('qwen.util')
  local sid = H.ok(session.session_id, 'a session to reload')
  for _, c in ipairs(util.get_clients('qwen')) do
    vim.lsp.stop_client(c.id)
  end
  H.wait(5000, function()
    return #util.get_clients('qwen') == 0 and session.client_id == nil
  end, 'qwen-ls to stop')
  local started = false
  session.with_client(function()
    started = true
  end)
  H.wait(10000, function()
    return started and vim.lsp.get_client_by_id(session.client_id) ~= nil
  end, 'a new qwen-ls')
  local loaded = false
  session.load(sid, function()
    loaded = true
  end)
  H.wait(10000, function()
    return loaded
  end, 'the session to load')
end

--- Sends a prompt as a user does: typed into the chat's input, sent with
--- the submit keymap.
function H.type_prompt(text)
  local chat = require('qwen.chat')
  chat.open()
  vim.api.nvim_set_current_win(vim.fn.bufwinid(chat.input))
  vim.api.nvim_buf_set_lines(chat.input, 0, -1, false, vim.split(text, '\n'))
  H.feed('<C-s>')
end

function H.feed(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'x', false)
end

function H.wait_review()
  local review = require('qwen.review')
  local r
  H.wait(15000, function()
    r = review.list()[1]
    return r ~= nil and r.buf ~= nil and r.maps ~= nil
  end, 'a review to open')
  return r
end

--- The review extmarks of buf, with details.
function H.marks(buf)
  local ns = vim.api.nvim_create_namespace('qwen-review')
  return vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
end

--- Text of every virtual line of buf's review marks.
function H.virt_lines(buf)
  local out = {}
  for _, m in ipairs(H.marks(buf)) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      local t = {}
      for _, chunk in ipairs(vl) do
        table.insert(t, chunk[1])
      end
      table.insert(out, table.concat(t))
    end
  end
  return out
end

--- A second, real Neovim (the first one runs the tests) driven over its
--- RPC channel as a person's terminal would drive it: keys arrive through
--- nvim_input and are read by its own main loop, in whatever mode it is in.
--- It runs this checkout's plugin against the current scripted model, in
--- the workspace (env: changes to the model's environment). Returns the
--- channel.
function H.child(env)
  local chan = vim.fn.jobstart({ H.nvim, '--embed', '--headless', '-u', 'NONE', '-i', 'NONE', '-n' }, {
    rpc = true,
    cwd = H.ws,
  })
  H.ok(chan > 0, 'a child Neovim to start')
  H.defer(function()
    pcall(vim.rpcrequest, chan, 'nvim_exec_lua', [[
      for _, c in ipairs(require('qwen.util').get_clients('qwen')) do vim.lsp.stop_client(c.id, true) end
      vim.wait(3000, function() return #require('qwen.util').get_clients('qwen') == 0 end, 10)
    ]], {})
    vim.fn.jobstop(chan)
  end)
  H.child_lua(chan, [[
    local plugin, bin, env = ...
    vim.opt.runtimepath:prepend(plugin)
    vim.cmd('runtime plugin/qwen.lua')
    _G.notified = {}
    vim.notify = function(msg, level)
      table.insert(_G.notified, { msg = tostring(msg), level = level or vim.log.levels.INFO })
    end
    require('qwen').setup({ cmd = { bin, '--stdio' }, cmd_env = env })
  ]], H.plugin, H.bin, vim.tbl_extend('force', {
    HOME = H.home,
    OPENAI_BASE_URL = H.current_model and H.current_model.url or nil,
    OPENAI_MODEL = 'scripted',
    OPENAI_API_KEY = 'sk-test',
  }, env or {}))
  return chan
end

--- Runs Lua in the child and returns its result.
function H.child_lua(chan, code, ...)
  return vim.rpcrequest(chan, 'nvim_exec_lua', code, { ... })
end

--- A process's command line (arguments joined by spaces), or nil when it
--- is gone or a zombie.
function H.cmdline(pid)
  local stat = H.read('/proc/' .. pid .. '/stat')
  if not stat or stat:match('^%d+ %b() Z') then
    return nil
  end
  return ((H.read('/proc/' .. pid .. '/cmdline') or ''):gsub('%z', ' '))
end

--- The live descendants of pid (as numbers), children first.
function H.descendants(pid)
  local parent = {}
  for _, name in ipairs(vim.fn.readdir('/proc')) do
    local stat = name:match('^%d+$') and H.read('/proc/' .. name .. '/stat')
    local ppid = stat and not stat:match('^%d+ %b() Z') and stat:match('^%d+ %b() %a (%d+)')
    if ppid then
      parent[tonumber(name)] = tonumber(ppid)
    end
  end
  local out, seen = {}, { [pid] = true }
  local grew = true
  while grew do
    grew = false
    for p, pp in pairs(parent) do
      if seen[pp] and not seen[p] then
        seen[p] = true
        table.insert(out, p)
        grew = true
      end
    end
  end
  return out
end

--- The live children of this Neovim whose command line contains text.
function H.own_processes(text)
  local out = {}
  for _, p in ipairs(H.descendants(vim.fn.getpid())) do
    local cmd = H.cmdline(p)
    if cmd and cmd:find(text, 1, true) then
      table.insert(out, p)
    end
  end
  return out
end

--- Attaches gopls to every Go buffer of the workspace, as a user's config
--- does. Returns a function that gives the gopls client once it runs.
function H.attach_gopls()
  local gopls = H.gopls() or H.skip('gopls is not installed (CI installs it: GOBIN=DIR go install golang.org/x/tools/gopls@v0.23.0)')
  vim.cmd('filetype on')
  local config = { name = 'gopls', cmd = { gopls }, root_dir = H.ws }
  local id
  local group = vim.api.nvim_create_augroup('test-gopls', { clear = true })
  H.defer(function()
    pcall(vim.api.nvim_del_augroup_by_name, 'test-gopls')
    local c = id and vim.lsp.get_client_by_id(id)
    if c then
      -- gopls writes its cache until it exits: wait for the process
      vim.lsp.stop_client(id)
      vim.wait(10000, function()
        return vim.lsp.get_client_by_id(id) == nil and #H.own_processes(gopls) == 0
      end, 20)
    end
  end)
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = 'go',
    callback = function(ev)
      if vim.lsp.start then
        id = vim.lsp.start(config, { bufnr = ev.buf })
      else
        id = id or vim.lsp.start_client(config)
        vim.lsp.buf_attach_client(ev.buf, id)
      end
    end,
  })
  return function()
    local c
    H.wait(30000, function()
      c = id and vim.lsp.get_client_by_id(id)
      return c and c.initialized
    end, 'gopls to start')
    -- gopls answers once it has loaded the module, which takes a while
    -- cold; Neovim 0.7 gives a request a few seconds only (it blocks).
    local reply = vim.lsp.buf_request_sync(0, 'textDocument/documentSymbol', { textDocument = vim.lsp.util.make_text_document_params() }, 60000)
    H.ok(reply and reply[c.id], 'gopls to load the module')
    return c
  end
end

--- Stops everything the test started.
function H.cleanup()
  pcall(function()
    for _, c in ipairs(require('qwen.util').get_clients('qwen')) do
      vim.lsp.stop_client(c.id)
    end
    local gone = vim.wait(5000, function()
      return #require('qwen.util').get_clients('qwen') == 0
    end, 10)
    if not gone then
      for _, c in ipairs(require('qwen.util').get_clients('qwen')) do
        vim.lsp.stop_client(c.id, true)
      end
      vim.wait(3000, function()
        return #require('qwen.util').get_clients('qwen') == 0
      end, 10)
    end
  end)
  for i = #cleanups, 1, -1 do
    pcall(cleanups[i])
  end
  cleanups = {}
  pcall(vim.cmd, 'silent! only!')
  pcall(vim.cmd, 'silent! %bwipeout!')
  pcall(vim.api.nvim_del_augroup_by_name, 'qwen')
  for name in pairs(package.loaded) do
    if name == 'qwen' or name:match('^qwen%.') then
      package.loaded[name] = nil
    end
  end
  vim.g.loaded_qwen = nil
  H.current_model, H.model_base = nil, nil
end

return H
