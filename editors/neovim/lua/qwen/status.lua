-- What the agent is doing, for the statusline: idle, working (with the
-- running tool), or waiting for the user; and the approval mode.
local M = {
  busy = false,
  tool = nil,
  waiting = 0,
  mode = nil,
  progress = nil,
}

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

--- The statusline component: `qwen: idle [default]`.
function M.statusline()
  local what
  if M.waiting > 0 then
    what = 'waiting for you'
  elseif M.busy then
    local detail = M.tool or M.progress
    what = detail and ('working: ' .. detail) or 'working'
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
