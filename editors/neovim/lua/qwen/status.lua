-- What the agent is doing, for the statusline: idle, working (with the
-- running tool), a review waiting, a question waiting, or why it cannot
-- work (no model, no qwen-ls); and the approval mode.
local M = {
  busy = false,
  tool = nil,
  waiting = 0,
  review = nil, -- undecided hunks of the reviews that arrived
  mode = nil,
  progress = nil,
  no_model = false, -- initialize said experimental.qwen.model = null
  not_found = false, -- the qwen-ls command is not executable
  model = nil, -- the chat session's model (or the server's default)
  totals = nil, -- the chat session's token totals (qwen.model.totals)
}

-- The longest detail (a tool title, a shell command) the statusline shows.
M.max_detail = 40
-- The longest model id the statusline shows.
M.max_model = 24

local function changed()
  pcall(vim.api.nvim_exec_autocmds, 'User', { pattern = 'QwenStatus', modeline = false })
  pcall(vim.cmd, 'redrawstatus!')
end

function M.set(fields)
  for k, v in pairs(fields) do
    if v == vim.NIL then
      M[k] = nil
    else
      M[k] = v
    end
  end
  changed()
end

function M.wait(delta)
  M.waiting = math.max(0, M.waiting + delta)
  changed()
end

--- s cut to at most n characters (not bytes), ending in … when cut.
function M.cut(s, n)
  s = tostring(s):gsub('%s+', ' ')
  if vim.fn.strchars(s) <= n then
    return s
  end
  return vim.fn.strcharpart(s, 0, n - 1) .. '…'
end

--- A token count in few characters: 950, 12.3k, 4.1M.
function M.short(n)
  if n < 1000 then
    return tostring(n)
  elseif n < 1000000 then
    return (string.format('%.1fk', n / 1000):gsub('%.0k$', 'k'))
  end
  return (string.format('%.1fM', n / 1000000):gsub('%.0M$', 'M'))
end

--- The statusline component: `qwen: idle [default]`.
function M.statusline()
  local what
  if M.not_found then
    what = 'qwen-ls not found'
  elseif M.waiting > 0 then
    what = 'waiting for you'
  elseif M.review then
    what = string.format('review: %d hunk%s', M.review, M.review == 1 and '' or 's')
  elseif M.busy then
    local detail = M.tool or M.progress
    what = detail and ('working: ' .. M.cut(detail, M.max_detail)) or 'working'
  elseif M.no_model then
    what = 'no model'
  else
    what = 'idle'
  end
  local s = 'qwen: ' .. what
  if M.mode then
    s = s .. ' [' .. M.mode .. ']'
  end
  local o = require('qwen.config').options.statusline or {}
  if o.model ~= false and M.model and not M.no_model and not M.not_found then
    s = s .. ' · ' .. M.cut(M.model, M.max_model)
  end
  if o.tokens and M.totals and M.totals.turns > 0 then
    s = s .. string.format(' · %s/%s tok', M.short(M.totals.input), M.short(M.totals.output))
  end
  return s
end

return M
