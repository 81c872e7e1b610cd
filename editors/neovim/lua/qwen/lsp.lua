-- qwen/lsp: the agent's code intelligence from the language servers this
-- Neovim already runs for the person (docs/protocol.md, "Code intelligence
-- (`qwen/lsp`)"). A request goes to the document's OTHER attached clients,
-- never to qwen-ls itself; diagnostics come from vim.diagnostic. The
-- answer is {served = true, result, servers} or {served = false, reason}
-- when nothing in Neovim covers the document, and qwen-ls then uses a
-- language server of its own.
--
-- On Neovim 0.10+ the handler runs in a coroutine and yields while the
-- language servers work, so the editor never waits. Neovim 0.7 answers a
-- server request on the spot: there the handler waits (vim.wait, a few
-- seconds at most) and answers served = false when an API it needs is
-- missing.
local util = require('qwen.util')

local M = {}

-- The LSP methods qwen-ls may ask, with the server capability each needs
-- (for a client without supports_method).
local capability = {
  ['textDocument/definition'] = 'definitionProvider',
  ['textDocument/references'] = 'referencesProvider',
  ['textDocument/hover'] = 'hoverProvider',
  ['textDocument/documentSymbol'] = 'documentSymbolProvider',
  ['workspace/symbol'] = 'workspaceSymbolProvider',
  ['textDocument/implementation'] = 'implementationProvider',
  ['textDocument/prepareCallHierarchy'] = 'callHierarchyProvider',
  ['callHierarchy/incomingCalls'] = 'callHierarchyProvider',
  ['callHierarchy/outgoingCalls'] = 'callHierarchyProvider',
  ['textDocument/codeAction'] = 'codeActionProvider',
}
M.methods = capability

-- How long a language server may take to answer, and the longest wait for
-- diagnostics. Neovim 0.7 blocks while it waits, so it waits less.
local can_yield = coroutine.running ~= nil
M.request_timeout = 15000
M.sync_request_timeout = 4000
M.max_diagnostics_wait = 30000
M.sync_max_diagnostics_wait = 3000
-- A buffer loaded for a request: how long its language servers may take
-- to attach (a FileType autocommand that schedules the attach), and to
-- initialize when they start for it.
M.attach_grace = 100
M.attach_wait = 15000
M.sync_attach_wait = 3000

-- Per buffer: the LSP version (vim.lsp.util.buf_versions, the same number
-- every client of the buffer is sent) at which its diagnostics last changed.
local changed_at = {}

local function version_of(buf)
  local v = vim.lsp.util and vim.lsp.util.buf_versions and vim.lsp.util.buf_versions[buf]
  if type(v) ~= 'number' then
    v = vim.api.nvim_buf_get_changedtick(buf)
  end
  return v
end

local function all_clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients()
  end
  return vim.lsp.get_active_clients()
end

--- Whether a client is qwen-ls itself (of any root): never asked.
function M.is_qwen(c)
  if c.name == 'qwen' then
    return true
  end
  for _, id in pairs(require('qwen.client').by_root) do
    if id == c.id then
      return true
    end
  end
  return false
end

local function qwen_namespaces()
  local out = {}
  local get = vim.lsp.diagnostic and vim.lsp.diagnostic.get_namespace
  if get then
    for _, c in ipairs(all_clients()) do
      if M.is_qwen(c) then
        out[get(c.id)] = true
      end
    end
  end
  return out
end

-- The publishDiagnostics being handled: {uri, version?, client_id}.
local publishing = nil
-- Per client and buffer: the version last sent to it (didOpen/didChange,
-- seen through LspNotify on 0.10+).
local sent = {}
-- Per client and buffer: true from a didOpen until the client's first
-- publish for that buffer.
local unpublished = {}
-- Clients seen to name a version in a publish.
local names_versions = {}

--- The version a publishDiagnostics of client_id for buf is of. A server
--- that names versions and leaves one out left out 0 (gopls drops a zero
--- version, the one Neovim opens documents at); the first publish after a
--- didOpen is of the opened text; otherwise a publish without a version is
--- of the version last sent to that server (0.10+), else of the version
--- the buffer stands at (nil here).
local function dated(p, buf)
  if p.version then
    return p.version
  end
  local c = p.client_id
  if not c then
    return nil
  end
  if names_versions[c] or (unpublished[c] and unpublished[c][buf]) then
    return 0
  end
  return sent[c] and sent[c][buf]
end

--- Wraps the global publishDiagnostics handler once, to learn whose
--- diagnostics change and for which version (see dated): a publish
--- computed for an older text that arrives after an edit then does not
--- count as the new text's diagnostics. A handler set later in the
--- person's config replaces the wrapper; DiagnosticChanged alone then
--- dates a change by the buffer's version, as docs/protocol.md says.
function M.track()
  local h = vim.lsp.handlers['textDocument/publishDiagnostics']
  if type(h) == 'function' and not M.wrapped then
    local orig = h
    M.wrapped = function(err, result, ctx, config)
      local prev = publishing
      local c = nil
      if type(result) == 'table' then
        local v = result.version
        c = type(ctx) == 'table' and ctx.client_id or nil
        publishing = {
          uri = result.uri,
          version = type(v) == 'number' and v or nil,
          client_id = c,
        }
        if c and publishing.version then
          names_versions[c] = true
        end
      end
      local ok, r1, r2 = pcall(orig, err, result, ctx, config)
      publishing = prev
      -- Only while the server owes a first report (gopls reports on many
      -- files that are not open).
      if c and unpublished[c] and next(unpublished[c]) and type(result.uri) == 'string' then
        local found, buf = pcall(vim.uri_to_bufnr, result.uri)
        if found then
          unpublished[c][buf] = nil
        end
      end
      if not ok then
        error(r1, 0)
      end
      return r1, r2
    end
    vim.lsp.handlers['textDocument/publishDiagnostics'] = M.wrapped
  end
end

--- LspNotify (0.10+): the version each server was last sent.
function M.on_notify(ev)
  local d = type(ev.data) == 'table' and ev.data or {}
  if d.method ~= 'textDocument/didChange' and d.method ~= 'textDocument/didOpen' then
    return
  end
  local td = type(d.params) == 'table' and d.params.textDocument or nil
  if type(td) ~= 'table' or type(td.version) ~= 'number' or not d.client_id then
    return
  end
  local ok, buf = pcall(vim.uri_to_bufnr, td.uri)
  if ok then
    sent[d.client_id] = sent[d.client_id] or {}
    sent[d.client_id][buf] = td.version
    if d.method == 'textDocument/didOpen' then
      unpublished[d.client_id] = unpublished[d.client_id] or {}
      unpublished[d.client_id][buf] = true
    end
  end
end

--- DiagnosticChanged: remembers the version the diagnostics belong to (see
--- M.track). Changes that come only from qwen-ls's own namespace do not
--- count.
function M.on_diagnostic_changed(ev)
  local buf = ev.buf
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local p = publishing
  if p and p.client_id then
    local c = vim.lsp.get_client_by_id(p.client_id)
    if c and M.is_qwen(c) then
      return
    end
  end
  local diags = type(ev.data) == 'table' and ev.data.diagnostics or nil
  if type(diags) == 'table' and #diags > 0 then
    local ours = qwen_namespaces()
    local other = false
    for _, d in ipairs(diags) do
      if not ours[d.namespace] then
        other = true
        break
      end
    end
    if not other then
      return
    end
  end
  local v = version_of(buf)
  if p and vim.uri_to_bufnr(p.uri) == buf then
    local of = dated(p, buf)
    if of and of < v then
      v = of
    end
  end
  changed_at[buf] = math.max(changed_at[buf] or v, v)
end

--- The version at which buf's diagnostics last changed, or nil.
function M.changed_at(buf)
  return changed_at[buf]
end

--- wait(ms, cond): true once cond() holds, false after ms. Inside the
--- handler's coroutine (0.10+) it yields to the event loop; elsewhere it is
--- vim.wait.
local function waiter()
  local co = can_yield and coroutine.running() or nil
  if not co then
    return function(ms, cond)
      if cond() then
        return true
      end
      return vim.wait(ms, cond, 10) == true
    end, false
  end
  return function(ms, cond)
    if cond() then
      return true
    end
    local deadline = vim.loop.now() + ms
    local result
    local function poll()
      local ok, yes = pcall(cond)
      if not ok or yes then
        result = ok and yes or false
      elseif vim.loop.now() >= deadline then
        result = false
      end
      if result == nil then
        vim.defer_fn(poll, 10)
        return
      end
      -- The answer is sent when the coroutine ends; qwen-ls may be gone.
      local resumed, err = coroutine.resume(co)
      if not resumed then
        pcall(require('vim.lsp.log').warn, 'qwen/lsp: ' .. tostring(err))
      end
    end
    vim.defer_fn(poll, 10)
    coroutine.yield()
    return result
  end, true
end

local function supports(c, method, buf)
  if not c.initialized then
    return false
  end
  if c.supports_method then
    local ok, yes
    if util.has011 then
      ok, yes = pcall(c.supports_method, c, method, buf)
    elseif util.has08 then
      ok, yes = pcall(c.supports_method, method, { bufnr = buf })
    else
      ok, yes = pcall(c.supports_method, method)
    end
    if ok then
      return yes and true or false
    end
  end
  local caps = c.server_capabilities or {}
  local v = caps[capability[method] or '']
  return v ~= nil and v ~= false
end

--- The clients other than qwen-ls attached to buf.
function M.others(buf)
  local out = {}
  for _, c in ipairs(all_clients()) do
    if not M.is_qwen(c) and vim.lsp.buf_is_attached(buf, c.id) then
      table.insert(out, c)
    end
  end
  table.sort(out, function(a, b)
    return a.id < b.id
  end)
  return out
end

local function fname_of(uri)
  if type(uri) ~= 'string' or not uri:match('^file:') then
    return nil
  end
  local ok, f = pcall(vim.uri_to_fname, uri)
  return ok and f or nil
end

--- The loaded buffer of a file URI, loading it (hidden and unlisted, no
--- window changes) when it is not; nil and why when it cannot be.
local function buffer_for(uri, wait, async, opened)
  local fname = fname_of(uri)
  if not fname then
    return nil, 'not a file: ' .. tostring(uri)
  end
  local buf
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == fname then
      buf = b
    end
  end
  local loaded = false
  if not (buf and vim.api.nvim_buf_is_loaded(buf)) then
    if not vim.loop.fs_stat(fname) then
      return nil, 'no such file: ' .. fname
    end
    buf = buf or vim.uri_to_bufnr(uri)
    vim.fn.bufload(buf)
    loaded = true
    table.insert(opened, buf)
    -- Its language servers attach from FileType autocommands, at once or
    -- scheduled.
    if vim.api.nvim_buf_get_option(buf, 'filetype') ~= '' then
      wait(M.attach_grace, function()
        return #M.others(buf) > 0
      end)
    end
  end
  -- A server still starting (the file was just opened) answers soon: wait
  -- for it rather than tell qwen-ls to start a second one.
  wait(async and M.attach_wait or M.sync_attach_wait, function()
    for _, c in ipairs(M.others(buf)) do
      if not c.initialized then
        return false
      end
    end
    return true
  end)
  return buf, nil, loaded
end

-- Lines of documents, for position conversions: the buffer's text when
-- loaded, else the file on disk.
local function line_source()
  local files, bufs = {}, nil
  return function(uri, lnum)
    local fname = fname_of(uri)
    if not fname then
      return nil
    end
    if not bufs then
      bufs = {}
      for _, b in ipairs(vim.api.nvim_list_bufs()) do
        if vim.api.nvim_buf_is_loaded(b) then
          bufs[vim.api.nvim_buf_get_name(b)] = b
        end
      end
    end
    local b = bufs[fname]
    if b then
      return vim.api.nvim_buf_get_lines(b, lnum, lnum + 1, false)[1]
    end
    if files[fname] == nil then
      local f = io.open(fname, 'rb')
      files[fname] = f and vim.split(f:read('*a'), '\n', { plain = true }) or false
      if f then
        f:close()
      end
    end
    return files[fname] and files[fname][lnum + 1] or nil
  end
end

-- A converter of positions between two encodings ('utf-8', 'utf-16',
-- 'utf-32'); every function changes its argument in place.
local function converter(from, to)
  local cv = { same = from == to }
  local line = line_source()
  function cv.pos(p, uri)
    if cv.same or type(p) ~= 'table' or type(p.character) ~= 'number' or p.character == 0 then
      return
    end
    local text = line(uri, p.line)
    if text then
      p.character = util.units_of(text, util.byte_of(text, p.character, from), to)
    end
  end
  function cv.range(r, uri)
    if type(r) == 'table' then
      cv.pos(r.start, uri)
      cv.pos(r['end'], uri)
    end
  end
  function cv.item(it)
    if type(it) == 'table' then
      cv.range(it.range, it.uri)
      cv.range(it.selectionRange, it.uri)
    end
  end
  function cv.location(l, origin)
    if type(l) ~= 'table' then
      return
    end
    if l.targetUri then
      cv.range(l.targetRange, l.targetUri)
      cv.range(l.targetSelectionRange, l.targetUri)
      cv.range(l.originSelectionRange, origin)
    else
      cv.range(l.range, l.uri)
    end
  end
  function cv.symbol(s, uri)
    if type(s) ~= 'table' then
      return
    end
    if type(s.location) == 'table' then
      cv.range(s.location.range, s.location.uri)
    else
      cv.range(s.range, uri)
      cv.range(s.selectionRange, uri)
      for _, child in ipairs(s.children or {}) do
        cv.symbol(child, uri)
      end
    end
  end
  return cv
end

local function encoding_of(c)
  return c and c.offset_encoding or 'utf-16'
end

local function is_null(v)
  return v == nil or v == vim.NIL
end

-- Converts a request's params (qwen-ls's encoding) for a client.
local function params_for(method, params, from, to)
  if from == to then
    return params
  end
  local p = vim.deepcopy(params)
  local cv = converter(from, to)
  local uri = type(p.textDocument) == 'table' and p.textDocument.uri or nil
  cv.pos(p.position, uri)
  cv.range(p.range, uri)
  if type(p.context) == 'table' and type(p.context.diagnostics) == 'table' then
    for _, d in ipairs(p.context.diagnostics) do
      cv.range(d.range, uri)
    end
  end
  if method:match('^callHierarchy/') then
    cv.item(p.item)
  end
  return p
end

local function list(v)
  if is_null(v) then
    return {}
  end
  if type(v) == 'table' and (v.uri or v.targetUri) then
    return { v }
  end
  return type(v) == 'table' and v or {}
end

-- Converts one client's result into qwen-ls's encoding (in place).
local function convert_result(method, result, params, from, to)
  if from == to or is_null(result) then
    return
  end
  local cv = converter(from, to)
  local uri = type(params.textDocument) == 'table' and params.textDocument.uri or nil
  if method == 'textDocument/hover' then
    cv.range(result.range, uri)
  elseif method == 'textDocument/documentSymbol' or method == 'workspace/symbol' then
    for _, s in ipairs(result) do
      cv.symbol(s, uri)
    end
  elseif method == 'textDocument/prepareCallHierarchy' then
    for _, it in ipairs(result) do
      cv.item(it)
    end
  elseif method == 'callHierarchy/incomingCalls' then
    for _, call in ipairs(result) do
      cv.item(call.from)
      for _, r in ipairs(call.fromRanges or {}) do
        cv.range(r, type(call.from) == 'table' and call.from.uri or nil)
      end
    end
  elseif method == 'callHierarchy/outgoingCalls' then
    for _, call in ipairs(result) do
      cv.item(call.to)
      for _, r in ipairs(call.fromRanges or {}) do
        cv.range(r, type(params.item) == 'table' and params.item.uri or nil)
      end
    end
  elseif method ~= 'textDocument/codeAction' then
    for _, l in ipairs(list(result)) do
      cv.location(l, uri)
    end
  end
end

local function hover_text(contents)
  if type(contents) == 'string' then
    return contents
  end
  if type(contents) ~= 'table' then
    return ''
  end
  if contents.value then
    if contents.language then
      return '```' .. contents.language .. '\n' .. contents.value .. '\n```'
    end
    return contents.value
  end
  local parts = {}
  for _, c in ipairs(contents) do
    table.insert(parts, hover_text(c))
  end
  return table.concat(parts, '\n\n')
end

-- One result from the clients' answers.
local function merge(method, results)
  if method == 'textDocument/hover' then
    local hovers = vim.tbl_filter(function(r)
      return type(r) == 'table' and r.contents ~= nil
    end, results)
    if #hovers == 0 then
      return vim.NIL
    elseif #hovers == 1 then
      return hovers[1]
    end
    local texts = vim.tbl_map(function(h)
      return hover_text(h.contents)
    end, hovers)
    return { contents = { kind = 'markdown', value = table.concat(texts, '\n\n---\n\n') } }
  end
  local out = {}
  if method == 'textDocument/codeAction' then
    -- Listed, never applied: only what the agent reads.
    for _, r in ipairs(results) do
      for _, a in ipairs(list(r)) do
        table.insert(out, { title = a.title, kind = a.kind, isPreferred = a.isPreferred, disabled = a.disabled })
      end
    end
    return out
  end
  local seen = {}
  for _, r in ipairs(results) do
    for _, v in ipairs(list(r)) do
      local key = vim.json.encode(v)
      if not seen[key] then
        seen[key] = true
        table.insert(out, v)
      end
    end
  end
  return out
end

-- Sends method to every client, each with its params, and waits for all
-- answers (or the timeout). Returns {client, err, result} per client.
local function ask(clients, method, params_of, buf, wait, timeout)
  local answers, ids = {}, {}
  local pending = 0
  for _, c in ipairs(clients) do
    local ok, id = util.request(c, method, params_of(c), function(err, result)
      if answers[c.id] then
        return
      end
      answers[c.id] = { client = c, err = err, result = result }
      pending = pending - 1
    end, buf)
    if ok then
      pending = pending + 1
      ids[c.id] = id
    else
      answers[c.id] = { client = c, err = { message = 'the request could not be sent' } }
    end
  end
  wait(timeout, function()
    return pending <= 0
  end)
  local out = {}
  for _, c in ipairs(clients) do
    local a = answers[c.id]
    if not a then
      pcall(function()
        if util.has011 then
          c:cancel_request(ids[c.id])
        else
          c.cancel_request(ids[c.id])
        end
      end)
      a = { client = c, err = { message = string.format('no answer within %d s', math.floor(timeout / 1000)) } }
      answers[c.id] = a
    end
    table.insert(out, a)
  end
  return out
end

local function served(method, answers, params, qenc)
  local results, servers, errors = {}, {}, {}
  for _, a in ipairs(answers) do
    if a.err then
      table.insert(errors, a.client.name .. ': ' .. tostring(type(a.err) == 'table' and a.err.message or a.err))
    else
      convert_result(method, a.result, params, encoding_of(a.client), qenc)
      table.insert(results, a.result)
      table.insert(servers, a.client.name)
    end
  end
  if #servers == 0 then
    return nil, table.concat(errors, '; ')
  end
  return { served = true, result = merge(method, results), servers = servers }
end

local function not_served(reason)
  return { served = false, reason = reason }
end

local function shortname(uri)
  local f = fname_of(uri)
  return f and vim.fn.fnamemodify(f, ':~:.') or tostring(uri)
end

local function timeout_for(async)
  return async and M.request_timeout or M.sync_request_timeout
end

local function document_request(method, params, qenc, wait, async, opened)
  local uri
  if method:match('^callHierarchy/') then
    uri = type(params.item) == 'table' and params.item.uri or nil
  else
    uri = type(params.textDocument) == 'table' and params.textDocument.uri or nil
  end
  local buf, why = buffer_for(uri, wait, async, opened)
  if not buf then
    return not_served(why)
  end
  local others = M.others(buf)
  if #others == 0 then
    return not_served('no language server of Neovim is attached to ' .. shortname(uri))
  end
  local clients = vim.tbl_filter(function(c)
    return supports(c, method, buf)
  end, others)
  if #clients == 0 then
    local names = table.concat(vim.tbl_map(function(c) return c.name end, others), ', ')
    return not_served(string.format('the language servers attached to %s (%s) do not offer %s', shortname(uri), names, method))
  end
  local answers = ask(clients, method, function(c)
    return params_for(method, params, qenc, encoding_of(c))
  end, buf, wait, timeout_for(async))
  return served(method, answers, params, qenc)
end

local function workspace_symbol(params, qenc, wait, async, qclient)
  local root = qclient and qclient.config and qclient.config.root_dir
  local paths = require('qwen.paths')
  local function related(dir)
    return type(dir) == 'string' and root and (paths.inside(dir, root) or paths.inside(root, dir))
  end
  local clients = {}
  for _, c in ipairs(all_clients()) do
    if not M.is_qwen(c) and supports(c, 'workspace/symbol') then
      local yes = related(c.config and c.config.root_dir)
      for _, wf in ipairs(c.workspace_folders or {}) do
        yes = yes or related(fname_of(wf.uri))
      end
      if yes then
        table.insert(clients, c)
      end
    end
  end
  if #clients == 0 then
    return not_served('no language server of Neovim runs in ' .. tostring(root))
  end
  local answers = ask(clients, 'workspace/symbol', function(c)
    return params_for('workspace/symbol', params, qenc, encoding_of(c))
  end, nil, wait, timeout_for(async))
  return served('workspace/symbol', answers, params, qenc)
end

-- vim.diagnostic's diagnostics of buf (qwen-ls's own left out) as LSP
-- Diagnostics in encoding enc.
local function lsp_diagnostics(buf, enc, ours)
  local out = {}
  local function col(lnum, byte)
    local text = vim.api.nvim_buf_get_lines(buf, lnum, lnum + 1, false)[1]
    if not text or not byte then
      return 0
    end
    return util.units_of(text, math.min(byte, #text), enc)
  end
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    if not ours[d.namespace] then
      local lsp = type(d.user_data) == 'table' and type(d.user_data.lsp) == 'table' and d.user_data.lsp or {}
      local end_lnum = d.end_lnum or d.lnum
      table.insert(out, {
        range = {
          start = { line = d.lnum, character = col(d.lnum, d.col) },
          ['end'] = { line = end_lnum, character = col(end_lnum, d.end_col or d.col) },
        },
        severity = d.severity,
        message = d.message,
        source = d.source or lsp.source,
        code = d.code or lsp.code,
      })
    end
  end
  return out
end

local function diagnostics(params, qenc, wait, async, opened)
  if not (vim.diagnostic and vim.diagnostic.get) then
    return not_served('this Neovim has no vim.diagnostic')
  end
  local ours = qwen_namespaces()
  if is_null(params.uri) then
    local any = false
    for _, c in ipairs(all_clients()) do
      any = any or not M.is_qwen(c)
    end
    if not any then
      return not_served('no language server of Neovim is running')
    end
    local bufs = {}
    for _, d in ipairs(vim.diagnostic.get()) do
      if not ours[d.namespace] then
        bufs[d.bufnr] = true
      end
    end
    local out = {}
    for buf in pairs(bufs) do
      if util.file_name(buf) and vim.api.nvim_buf_is_loaded(buf) then
        local ds = lsp_diagnostics(buf, qenc, ours)
        if #ds > 0 then
          table.insert(out, { uri = vim.uri_from_bufnr(buf), diagnostics = ds })
        end
      end
    end
    table.sort(out, function(a, b)
      return a.uri < b.uri
    end)
    return { served = true, result = out }
  end
  local buf, why, loaded = buffer_for(params.uri, wait, async, opened)
  if not buf then
    return not_served(why)
  end
  local others = M.others(buf)
  if #others == 0 then
    return not_served('no language server of Neovim is attached to ' .. shortname(params.uri))
  end
  local timeout = tonumber(params.timeoutMs) or 0
  timeout = math.max(0, math.min(timeout, async and M.max_diagnostics_wait or M.sync_max_diagnostics_wait))
  local want = tonumber(params.version)
  if want then
    wait(timeout, function()
      return (changed_at[buf] or -1) >= want
    end)
  elseif loaded and timeout > 0 then
    -- Just opened: the servers have not published yet.
    wait(timeout, function()
      return changed_at[buf] ~= nil
    end)
  end
  local names = vim.tbl_map(function(c)
    return c.name
  end, others)
  return { served = true, result = { { uri = params.uri, diagnostics = lsp_diagnostics(buf, qenc, ours) } }, servers = names }
end

-- Unloads the buffers a request loaded, unless the person has opened
-- one meanwhile: a hidden buffer left loaded would keep the file open in
-- qwen-ls too, and an agent's edit would then stay in that unseen buffer,
-- unsaved.
local function close_hidden(bufs)
  for _, b in ipairs(bufs) do
    if vim.api.nvim_buf_is_loaded(b) and vim.fn.buflisted(b) == 0 and #vim.fn.win_findbuf(b) == 0
      and not vim.api.nvim_buf_get_option(b, 'modified') then
      pcall(vim.api.nvim_buf_delete, b, { unload = true })
    end
  end
end

local function rpc_error(msg)
  local mk = vim.lsp.rpc_response_error or vim.lsp.rpc.rpc_response_error
  return mk(vim.lsp.protocol.ErrorCodes.InternalError, msg)
end

--- The qwen/lsp handler: {sessionId, method, params} from the qwen-ls
--- client client_id. Returns the answer, or nil and an error.
function M.on_request(req, client_id)
  if type(req) ~= 'table' or type(req.method) ~= 'string' then
    return nil, rpc_error('qwen/lsp: method missing')
  end
  if not (vim.lsp.buf_is_attached and vim.lsp.util and vim.uri_to_bufnr and vim.fn.exists('*bufload') == 1) then
    return not_served('this Neovim lacks the LSP functions the plugin needs')
  end
  local method, params = req.method, type(req.params) == 'table' and req.params or {}
  local qclient = vim.lsp.get_client_by_id(client_id)
  local qenc = encoding_of(qclient)
  local wait, async = waiter()
  local opened = {}
  local ok, res, err = pcall(function()
    if method == 'qwen/diagnostics' then
      return diagnostics(params, qenc, wait, async, opened)
    elseif method == 'workspace/symbol' then
      return workspace_symbol(params, qenc, wait, async, qclient)
    elseif capability[method] then
      return document_request(method, params, qenc, wait, async, opened)
    end
    return not_served('unknown method ' .. method)
  end)
  close_hidden(opened)
  if not ok then
    return nil, rpc_error('qwen/lsp ' .. method .. ': ' .. tostring(res))
  end
  if res == nil then
    return nil, rpc_error(err or 'no answer')
  end
  return res
end

--- For :checkhealth: the clients of buf the agent can use, each with the
--- methods it offers ({name, encoding, methods}).
function M.usable(buf)
  local out = {}
  for _, c in ipairs(M.others(buf)) do
    local ms = {}
    for _, m in ipairs({
      { 'textDocument/definition', 'definition' },
      { 'textDocument/references', 'references' },
      { 'textDocument/hover', 'hover' },
      { 'textDocument/documentSymbol', 'documentSymbol' },
      { 'workspace/symbol', 'workspaceSymbol' },
      { 'textDocument/implementation', 'implementation' },
      { 'textDocument/prepareCallHierarchy', 'callHierarchy' },
      { 'textDocument/codeAction', 'codeActions' },
    }) do
      if supports(c, m[1], buf) then
        table.insert(ms, m[2])
      end
    end
    table.insert(ms, 'diagnostics')
    table.insert(out, { name = c.name, encoding = encoding_of(c), methods = ms, initialized = c.initialized and true or false })
  end
  return out
end

return M
