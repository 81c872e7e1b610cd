-- What the agent is doing, for the statusline: idle, working (with the
-- running tool), answering, a review waiting, a question waiting, or why it
-- cannot work (no model, what a configured model lacks, no qwen-ls); and
-- the approval mode.
local M = {
  busy = false,
  tool = nil,
  answering = false, -- the model's text streams (no tool runs)
  waiting = 0,
  review = nil, -- undecided hunks of the reviews that arrived
  mode = nil,
  progress = nil,
  no_model = false, -- nothing is configured (setup reason no_model)
  setup = nil, -- a configured model that cannot be used: the server's {reason, settings, env, ...}
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

-- What each setup problem lacks, in this plugin's terms: the options of
-- setup{ model = { name, baseUrl } }, and the variables of cmd_env (an API
-- key belongs there, never in the settings).
local missing = {
  no_endpoint = function(key)
    return 'no endpoint (model.baseUrl or ' .. key .. ')'
  end,
  no_model_name = function()
    return 'no model name (model.name)'
  end,
  no_api_key = function(key)
    return 'no API key (' .. key .. ')'
  end,
}

--- What a setup problem (the server's error.data or initialize's
--- experimental.qwen.setup) lacks, for the statusline and the chat's
--- header: "no API key (OPENAI_API_KEY)". nil for a problem that is not
--- about a missing setting.
function M.missing(setup)
  if type(setup) ~= 'table' then
    return nil
  end
  local f = missing[setup.reason]
  if not f then
    return nil
  end
  local key = 'OPENAI_API_KEY'
  for _, v in ipairs(type(setup.env) == 'table' and setup.env or {}) do
    if type(v) == 'string' and v:find('KEY', 1, true) then
      key = v
      break
    end
  end
  return f(key)
end

--- Records what the server says of the model's setup: setup is its
--- {reason, settings, env, ...} (nil: the model can be used). no_model is
--- "nothing configured"; the other reasons name what a configured model
--- lacks.
function M.set_setup(setup)
  if type(setup) ~= 'table' or setup.reason == nil then
    M.set({ no_model = false, setup = vim.NIL })
  elseif setup.reason == 'no_model' then
    M.set({ no_model = true, setup = vim.NIL })
  elseif M.missing(setup) then
    M.set({ no_model = false, setup = setup })
  end
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
  elseif M.busy and M.tool then
    what = 'working: ' .. M.cut(M.tool, M.max_detail)
  elseif M.busy and M.answering then
    -- The answer streams: the last tool's title is over.
    what = 'answering'
  elseif M.busy then
    what = M.progress and ('working: ' .. M.cut(M.progress, M.max_detail)) or 'working'
  elseif M.no_model then
    what = 'no model'
  elseif M.missing(M.setup) then
    what = M.missing(M.setup)
  else
    what = 'idle'
  end
  local s = 'qwen: ' .. what
  if M.mode then
    s = s .. ' [' .. M.mode .. ']'
  end
  local o = require('qwen.config').options.statusline or {}
  if o.model ~= false and M.model and not M.no_model and not M.setup and not M.not_found then
    s = s .. ' · ' .. M.cut(M.model, M.max_model)
  end
  if o.tokens and M.totals and M.totals.turns > 0 then
    s = s .. string.format(' · %s/%s tok', M.short(M.totals.input), M.short(M.totals.output))
  end
  return s
end

return M
