-- Choosing the chat session's model (qwen/listModels, qwen/setModel) and
-- what the session's turns cost in tokens.
local util = require('qwen.util')
local status = require('qwen.status')

local M = {}

local function session()
  return require('qwen.session')
end

-- The no_model failure of a prompt: the settings and variables to set.
local no_model_data = {
  reason = 'no_model',
  settings = { 'model.name', 'model.baseUrl' },
  env = { 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_MODEL' },
}

-- No model to choose: nothing configured, or what the configured one
-- lacks (status.setup).
local function tell_no_model()
  local missing = status.missing(status.setup)
  if missing then
    local hint = require('qwen.chat').setup_hint(status.setup)
    util.notify_user('the model cannot be used yet: ' .. missing .. (hint and ('. To fix it: ' .. hint) or '') .. '. :checkhealth qwen tries the model.', vim.log.levels.WARN)
    return
  end
  local hint = require('qwen.chat').setup_hint(no_model_data)
  util.notify_user('no model is configured. To fix it: ' .. hint .. '. :checkhealth qwen tries the model.', vim.log.levels.WARN)
end

--- The models the server offers: the result of qwen/listModels for the
--- chat's session (or the server's default), or nil and an error.
--- Synchronous, for command-line completion: waits at most timeout ms.
function M.list_sync(timeout)
  local s = session()
  local c = s.client_id and vim.lsp.get_client_by_id(s.client_id) or require('qwen.client').current(true)
  if not c then
    return nil
  end
  local client_mod = require('qwen.client')
  if not client_mod.is_ready(c.id) then
    vim.wait(timeout or 3000, function()
      return client_mod.is_ready(c.id)
    end, 10)
  end
  -- an empty table would go as [], which is no params object
  local params = vim.empty_dict()
  if s.session_id and c.id == s.client_id then
    params = { sessionId = s.session_id }
  end
  local reply = util.request_sync(c, 'qwen/listModels', params, timeout or 3000)
  if not reply or reply.err or type(reply.result) ~= 'table' then
    return nil
  end
  return reply.result
end

--- Completion of :QwenModel: the configured model ids.
function M.complete(arglead)
  local res = M.list_sync(3000)
  local out = {}
  for _, m in ipairs(res and res.models or {}) do
    if type(m.id) == 'string' and m.id:sub(1, #(arglead or '')) == (arglead or '') then
      table.insert(out, m.id)
    end
  end
  return out
end

--- The model of the statusline and the chat's header.
function M.show(id)
  if type(id) == 'string' and id ~= '' then
    status.set({ model = id, no_model = false, setup = vim.NIL })
  end
  require('qwen.chat').header_changed()
end

--- qwen/setModel for the chat's session (started first when there is
--- none). An unknown id is the server's -32602 message, told once.
function M.set(id, cb)
  id = vim.trim(id or '')
  if id == '' then
    return M.pick()
  end
  if status.no_model or status.setup then
    tell_no_model()
    return
  end
  session().with_session(function(c, sid)
    util.request(c, 'qwen/setModel', { sessionId = sid, modelId = id }, function(err, res)
      if err then
        util.notify_user(err.message or vim.inspect(err), vim.log.levels.ERROR)
      else
        M.show(res and res.model or id)
        util.notify_user('model: ' .. (res and res.model or id))
      end
      if cb then
        cb(err, res)
      end
    end)
  end)
end

--- :QwenModel without an argument: vim.ui.select over the models, the
--- current one marked.
function M.pick(cb)
  session().with_session(function(c, sid)
    util.request(c, 'qwen/listModels', { sessionId = sid }, function(err, res)
      if err then
        util.notify_user('could not list the models: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
        return
      end
      local models = type(res) == 'table' and res.models or {}
      local current = type(res.current) == 'string' and res.current or nil
      if #models == 0 or not current then
        tell_no_model()
        return
      end
      vim.ui.select(models, {
        prompt = 'Model of this qwen session:',
        format_item = function(m)
          local mark = m.id == current and '* ' or '  '
          local name = (type(m.name) == 'string' and m.name ~= '' and m.name ~= m.id) and (m.name .. ' (' .. m.id .. ')') or m.id
          return mark .. name .. '  [' .. tostring(m.provider or '?') .. ']'
        end,
      }, function(choice)
        if choice and choice.id ~= current then
          M.set(choice.id, cb)
        elseif cb then
          cb(nil, nil)
        end
      end)
    end)
  end)
end

-- Cost ---------------------------------------------------------------------

--- The session's token totals, summed over its turns.
M.totals = { turns = 0, input = 0, output = 0, cached = 0 }
--- The last usage_update: {used, size, cachedTokens} of the context window.
M.context = nil

function M.reset_totals()
  M.totals = { turns = 0, input = 0, output = 0, cached = 0 }
  M.context = nil
  status.set({ totals = vim.NIL })
  require('qwen.chat').header_changed()
end

local function num(v)
  return type(v) == 'number' and v or 0
end

--- Adds a turn's usage (qwen/prompt's result) to the totals.
function M.add_turn(usage)
  if type(usage) ~= 'table' then
    return
  end
  local t = M.totals
  t.turns = t.turns + 1
  t.input = t.input + num(usage.inputTokens)
  t.output = t.output + num(usage.outputTokens)
  t.cached = t.cached + num(usage.cachedTokens)
  status.set({ totals = t })
  require('qwen.chat').header_changed()
end

--- "4600 in, 150 out, 3840 cached" (cached only when some were).
function M.tokens(input, output, cached)
  local s = string.format('%d in, %d out', input, output)
  if cached > 0 then
    s = s .. string.format(', %d cached', cached)
  end
  return s
end

--- The one line the chat shows after a turn: its tokens and the
--- session's running totals.
function M.turn_line(usage)
  local t = M.totals
  return string.format('tokens %s · session %s', M.tokens(num(usage.inputTokens), num(usage.outputTokens), num(usage.cachedTokens)),
    M.tokens(t.input, t.output, t.cached))
end

--- :QwenStats: the session's model, totals and context window.
function M.stats()
  local t = M.totals
  local parts = {}
  table.insert(parts, 'model ' .. (status.model or 'none'))
  local s = string.format('%d turn%s: %s', t.turns, t.turns == 1 and '' or 's', M.tokens(t.input, t.output, t.cached))
  if t.cached > 0 and t.input > 0 then
    s = s .. string.format(' (%d%% of input cached)', math.floor(t.cached * 100 / t.input + 0.5))
  end
  table.insert(parts, s)
  local ctx = M.context
  if type(ctx) == 'table' and type(ctx.used) == 'number' then
    local c = 'context ' .. ctx.used
    if type(ctx.size) == 'number' and ctx.size > 0 then
      c = c .. ' of ' .. ctx.size
    end
    table.insert(parts, c)
  end
  local msg = table.concat(parts, ' · ')
  util.notify_user(msg)
  return msg
end

return M
