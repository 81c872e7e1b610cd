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
}

-- The longest detail (a tool title, a shell command) the statusline shows.
M.max_detail = 40

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
  return s
end

return M
