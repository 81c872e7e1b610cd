-- Sessions and prompts: qwen/newSession, qwen/prompt, qwen/cancel,
-- qwen/setApprovalMode, qwen/listSessions, qwen/loadSession,
-- qwen/revertTurn, and the qwen/sessionUpdate stream into the chat.
local util = require('qwen.util')
local client_mod = require('qwen.client')
local status = require('qwen.status')

local M = {}

-- The chat's session: one at a time, on one client.
M.client_id = nil
M.session_id = nil
M.busy = false
M.last_stop = nil -- {stopReason, usage} of the last turn
local token_seq = 0
local focus = nil -- the last focus sent, to skip repeats
local focus_buf = nil -- and its buffer

local function chat()
  return require('qwen.chat')
end

local function client()
  return M.client_id and vim.lsp.get_client_by_id(M.client_id) or nil
end

--- Runs fn(client, sessionId) with the chat's session, creating the client
--- and the session first when needed.
function M.with_session(fn, on_fail)
  M.with_client(function(cl)
    if M.session_id then
      return fn(cl, M.session_id)
    end
    local params = { cwd = cl.config.root_dir }
    util.request(cl, 'qwen/newSession', params, function(err, res)
      if err then
        util.notify_user('could not start a session: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return
      end
      M.session_id = res.sessionId
      status.set({ mode = res.approvalMode })
      require('qwen.model').show(res.model)
      require('qwen.commands').fetch()
      fn(cl, M.session_id)
    end)
  end, on_fail)
end

--- Tells the server which buffer is active and what is selected.
--- sel: { start = {line, col}, ['end'] = {line, col} } with 0-based lines
--- and byte columns, or nil for the cursor.
function M.send_focus(buf, sel)
  local name = util.file_name(buf)
  if not name then
    return
  end
  -- The focus goes to the server of the buffer's root.
  local id = client_mod.by_root[client_mod.root_for(name)]
  local c = id and vim.lsp.get_client_by_id(id)
  if not c or not client_mod.is_ready(c.id) then
    return
  end
  local params = { uri = vim.uri_from_bufnr(buf) }
  local enc = c.offset_encoding or 'utf-16'
  if sel then
    local function pos(p)
      local line = vim.api.nvim_buf_get_lines(buf, p[1], p[1] + 1, false)[1] or ''
      return { line = p[1], character = util.units_of(line, math.min(p[2], #line), enc) }
    end
    params.selection = { start = pos(sel.start), ['end'] = pos(sel['end']) }
  else
    local win = vim.fn.bufwinid(buf)
    if win ~= -1 then
      local pos = vim.api.nvim_win_get_cursor(win)
      local line = vim.api.nvim_buf_get_lines(buf, pos[1] - 1, pos[1], false)[1] or ''
      local ch = util.units_of(line, pos[2], enc)
      params.selection = { start = { line = pos[1] - 1, character = ch }, ['end'] = { line = pos[1] - 1, character = ch } }
    end
  end
  local key = vim.json.encode(params)
  if key == focus then
    return
  end
  focus = key
  focus_buf = buf
  util.notify(c, 'qwen/didFocus', params)
end

--- Sends a prompt. blocks: extra ACP content blocks (a selection).
function M.prompt(text, blocks)
  if M.busy then
    util.notify_user('a prompt is already running; :QwenCancel stops it', vim.log.levels.WARN)
    return false
  end
  M.busy = true
  M.cleared_in_turn = false
  status.set({ busy = true, tool = vim.NIL, answering = false })
  chat().user_message(text, blocks)
  M.with_session(function(c, sid)
    local last = require('qwen.chat').last_file_buffer()
    -- After :'<,'>QwenAsk the focus is the cursor (the lines are in the
    -- prompt already); else the focus is sent only if this buffer's was
    -- not (a Visual selection stays the focus).
    if last and (M.pending_focus_cursor or focus_buf ~= last) then
      M.send_focus(last, nil)
    end
    M.pending_focus_cursor = nil
    local prompt = { { type = 'text', text = text } }
    for _, b in ipairs(blocks or {}) do
      -- label is the transcript's; the server gets the ACP block only
      table.insert(prompt, { type = b.type, resource = b.resource, uri = b.uri, name = b.name, text = b.text })
    end
    token_seq = token_seq + 1
    local ok = util.request(c, 'qwen/prompt', { sessionId = sid, prompt = prompt, workDoneToken = 'qwen-prompt-' .. token_seq }, function(err, res)
      M.busy = false
      status.set({ busy = false, tool = vim.NIL, progress = vim.NIL, answering = false })
      if err then
        M.last_stop = { error = err }
        chat().turn_error(err)
        return
      end
      if type(res) == 'table' and type(res.usage) == 'table' then
        -- The model answered: whatever it lacked before is there now.
        status.set_setup(nil)
      end
      M.last_stop = res
      require('qwen.model').add_turn(res and res.usage)
      -- after /clear the chat shows only what came after it
      if not M.cleared_in_turn then
        chat().turn_end(res)
      end
    end)
    if not ok then
      M.busy = false
      status.set({ busy = false })
      chat().turn_error({ message = 'the server is not running' })
    end
  end, function()
    -- qwen-ls could not start; that was told once already.
    M.busy = false
    status.set({ busy = false, tool = vim.NIL })
    chat().note('qwen-ls is not running: see :checkhealth qwen')
  end)
  return true
end

function M.cancel()
  local c = client()
  if not c or not M.session_id then
    util.notify_user('nothing to cancel')
    return
  end
  util.notify(c, 'qwen/cancel', { sessionId = M.session_id })
end

function M.set_mode(mode)
  -- The modes the server offers (initialize's experimental.qwen.approvalModes).
  local modes = client_mod.approval_modes()
  if not vim.tbl_contains(modes, mode) then
    util.notify_user('unknown approval mode ' .. tostring(mode) .. '; use ' .. table.concat(modes, ', '), vim.log.levels.ERROR)
    return
  end
  M.with_session(function(c, sid)
    util.request(c, 'qwen/setApprovalMode', { sessionId = sid, mode = mode }, function(err)
      if err then
        util.notify_user('could not set the mode: ' .. err.message, vim.log.levels.ERROR)
        return
      end
      status.set({ mode = mode })
      util.notify_user('approval mode: ' .. mode)
    end)
  end)
end

--- Runs fn(client) with the chat's client, starting it when needed.
function M.with_client(fn, on_fail)
  local c = client()
  if not c then
    c = client_mod.current(true)
    if not c then
      if on_fail then
        on_fail()
      end
      return
    end
    M.client_id = c.id
    M.session_id = nil
    require('qwen.commands').reset()
  end
  client_mod.when_ready(c, fn)
end

function M.list_sessions(cb)
  M.with_client(function(c)
    util.request(c, 'qwen/listSessions', {}, function(err, res)
      if err then
        util.notify_user('could not list sessions: ' .. err.message, vim.log.levels.ERROR)
        return
      end
      cb(res.sessions or {})
    end)
  end)
end

--- Picks a session with vim.ui.select and replays it into the chat.
function M.pick_session()
  M.list_sessions(function(sessions)
    if #sessions == 0 then
      util.notify_user('no sessions yet')
      return
    end
    vim.ui.select(sessions, {
      prompt = 'Resume a qwen session:',
      format_item = function(s)
        local title = (s.title ~= nil and s.title ~= '') and s.title or '(untitled)'
        local mark = s.sessionId == M.session_id and '* ' or '  '
        return mark .. title .. '  (' .. util.local_time(s.updatedAt) .. ')'
      end,
    }, function(choice)
      if choice and choice.sessionId ~= M.session_id then
        M.load(choice.sessionId)
      end
    end)
  end)
end

function M.load(session_id, cb)
  local c = client()
  if not c then
    return
  end
  if M.busy then
    util.notify_user('a prompt is running; :QwenCancel it first', vim.log.levels.WARN)
    return
  end
  M.session_id = session_id
  chat().clear()
  require('qwen.model').reset_totals()
  util.request(c, 'qwen/loadSession', { sessionId = session_id }, function(err)
    if err then
      util.notify_user('could not load the session: ' .. err.message, vim.log.levels.ERROR)
      return
    end
    require('qwen.commands').fetch()
    -- The loaded session's own model, for the statusline and the header.
    util.request(c, 'qwen/listModels', { sessionId = session_id }, function(lerr, res)
      if not lerr and type(res) == 'table' then
        require('qwen.model').show(res.current)
      end
    end)
    if cb then
      cb()
    end
  end)
end

--- Starts a new, empty session in the chat.
function M.new_session()
  if M.busy then
    util.notify_user('a prompt is running; :QwenCancel it first', vim.log.levels.WARN)
    return
  end
  M.session_id = nil
  chat().clear()
  require('qwen.model').reset_totals()
end

--- qwen/revertTurn: undoes the files the last turn changed.
function M.undo_turn(cb)
  M.with_session(function(c, sid)
    util.request(c, 'qwen/revertTurn', { sessionId = sid }, function(err, res)
      local msg, level
      if err then
        if err.code == -32601 then
          msg = 'this qwen-ls cannot undo a turn yet (no qwen/revertTurn); update qwen-ls'
        else
          msg = 'could not undo the last turn: ' .. (err.message or '')
        end
        level = vim.log.levels.WARN
      else
        local parts = {}
        local function names(list)
          local out = {}
          for _, u in ipairs(list or {}) do
            table.insert(out, vim.fn.fnamemodify(require('qwen.paths').from_uri(type(u) == 'table' and u.uri or u), ':~:.'))
          end
          return table.concat(out, ', ')
        end
        if res.restored and #res.restored > 0 then
          table.insert(parts, 'restored ' .. names(res.restored))
        end
        if res.removed and #res.removed > 0 then
          table.insert(parts, 'removed ' .. names(res.removed))
        end
        if res.conflicts and #res.conflicts > 0 then
          table.insert(parts, 'left alone (changed since) ' .. names(res.conflicts))
          level = vim.log.levels.WARN
        end
        msg = #parts > 0 and ('undid the last turn: ' .. table.concat(parts, '; ')) or 'the last turn changed no files'
      end
      util.notify_user(msg, level)
      chat().note(msg)
      if cb then
        cb(err, res)
      end
    end)
  end)
end

function M.on_update(params, client_id)
  local u = type(params) == 'table' and type(params.update) == 'table' and params.update or {}
  local kind = u.sessionUpdate
  -- The command list may come before the new session's answer names it.
  if kind == 'available_commands_update' and client_id == M.client_id and (M.session_id == nil or params.sessionId == M.session_id) then
    local commands = require('qwen.commands')
    commands.set(commands.parse(u.availableCommands))
    return
  end
  if client_id ~= M.client_id or params.sessionId ~= M.session_id then
    return
  end
  if kind == 'history_cleared' then
    -- /clear: the same session with an empty history; the conversation so
    -- far is a session of its own on disk.
    M.cleared_in_turn = M.busy
    chat().clear()
    require('qwen.model').reset_totals()
    chat().note('The conversation was cleared. The earlier one is saved: :QwenSessions lists it.')
    return
  end
  if kind == 'current_mode_update' then
    status.set({ mode = u.currentModeId })
  elseif kind == 'tool_call' then
    status.set({ tool = u.title, answering = false })
  elseif kind == 'tool_call_update' and (u.status == 'completed' or u.status == 'failed') then
    status.set({ tool = vim.NIL })
  elseif kind == 'agent_message_chunk' and M.busy and not status.answering then
    -- The answer streams: the statusline no longer names the last tool.
    status.set({ answering = true, tool = vim.NIL, progress = vim.NIL })
  elseif kind == 'usage_update' then
    require('qwen.model').context = u
    status.set({ usage = u })
  elseif kind == 'current_model_update' then
    require('qwen.model').show(u.modelId)
  end
  chat().on_update(u)
end

function M.on_exit(client_id, code, signal)
  if client_id ~= M.client_id then
    return
  end
  M.client_id, M.session_id = nil, nil
  require('qwen.model').reset_totals()
  require('qwen.commands').reset()
  if M.busy then
    M.busy = false
    status.set({ busy = false, tool = vim.NIL })
    chat().turn_error({ message = string.format('qwen-ls exited (code %s, signal %s)', tostring(code), tostring(signal)) })
  end
end

return M
