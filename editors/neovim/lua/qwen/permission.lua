-- qwen/requestPermission through vim.ui.select. The request is answered
-- "deferred" at once (Neovim 0.7 cannot answer later) and the choice goes
-- back with qwen/resolveReview. A question that arrives while the person
-- types (Insert or command-line mode) waits until they leave that mode,
-- so typed keys never answer it.
local util = require('qwen.util')
local status = require('qwen.status')

local M = {}

M.pending = {} -- toolCallId -> {client_id, session_id}

--- The full text of what is asked: the command, URL or tool and its input.
function M.describe(tc)
  local lines = { tc.title or 'qwen wants to run a tool' }
  local input = type(tc.rawInput) == 'table' and tc.rawInput or {}
  if input.command then
    table.insert(lines, '$ ' .. input.command)
    if input.directory then
      table.insert(lines, 'in ' .. input.directory)
    end
  elseif input.url then
    table.insert(lines, 'URL: ' .. input.url)
  elseif input.prompt and input.url == nil and tc.kind == 'fetch' then
    table.insert(lines, input.prompt)
  else
    local ok, json = pcall(vim.json.encode, tc.rawInput)
    if ok and json ~= '{}' and json ~= 'null' then
      table.insert(lines, json)
    end
  end
  for _, item in ipairs(tc.content or {}) do
    if item.type == 'content' and item.content and item.content.text and item.content.text ~= '' then
      local t = item.content.text
      if not vim.tbl_contains(lines, t) and not vim.tbl_contains(lines, '$ ' .. t) then
        table.insert(lines, t)
      end
    end
  end
  return table.concat(lines, '\n')
end

--- Asks with vim.ui.select: every option the server sent, by its label,
--- in its order; the answer is the option's id.
local function ask(params, id, tc)
  if not M.pending[id] then
    return -- cancelled meanwhile
  end
  vim.ui.select(params.options or {}, {
    prompt = M.describe(tc) .. '\n',
    kind = 'qwen.permission',
    format_item = function(o)
      return o.name
    end,
  }, function(choice)
    local p = M.pending[id]
    if not p then
      return -- cancelled meanwhile
    end
    M.pending[id] = nil
    status.wait(-1)
    local c = vim.lsp.get_client_by_id(p.client_id)
    if not c then
      return
    end
    local ans = { sessionId = p.session_id, toolCallId = id, outcome = 'cancelled' }
    if choice then
      ans.outcome = 'selected'
      ans.optionId = choice.optionId
    end
    util.request(c, 'qwen/resolveReview', ans, function(err)
      if err then
        util.notify_user('the answer could not be sent: ' .. (err.message or ''), vim.log.levels.ERROR)
      end
    end)
  end)
end

local waiting = 0 -- questions held until the person stops typing

function M.on_request(params, client_id)
  local tc = params.toolCall or {}
  local id = tc.toolCallId
  M.pending[id] = { client_id = client_id, session_id = params.sessionId }
  status.wait(1)
  vim.schedule(function()
    if not M.pending[id] then
      return
    end
    if not util.typing() then
      return ask(params, id, tc)
    end
    -- Asked when the person leaves Insert (or command-line) mode: a
    -- question asked now would take their next keys as its answer.
    waiting = waiting + 1
    util.when_not_typing(function()
      waiting = waiting - 1
      ask(params, id, tc)
    end)
    util.notify_fit('asks to ' .. (tc.title or 'run a tool') .. ': press <Esc> to answer', 'a question waits: press <Esc> to answer')
  end)
  return { outcome = 'deferred' }
end

function M.on_cancelled(params, client_id)
  local p = M.pending[params.toolCallId]
  if p and p.client_id == client_id and p.session_id == params.sessionId then
    M.pending[params.toolCallId] = nil
    status.wait(-1)
  end
end

--- The questions held while the person types (for tests and statuslines).
function M.held()
  return waiting
end

function M.on_exit(client_id)
  for id, p in pairs(M.pending) do
    if p.client_id == client_id then
      M.pending[id] = nil
      status.wait(-1)
    end
  end
end

return M
