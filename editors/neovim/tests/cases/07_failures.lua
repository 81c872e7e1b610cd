-- Every failure says what to change: a dead endpoint, a model name alone,
-- a remote endpoint without a key, and no qwen-ls at all. Each is told once
-- per Neovim session in a notification that names the setting.
local function capture_notify(H)
  -- Room for a whole message on the command line: a shorter one is
  -- what fits (util.notify_fit).
  local columns = vim.o.columns
  vim.o.columns = 300
  H.defer(function()
    vim.o.columns = columns
  end)
  local seen = {}
  local orig = vim.notify
  vim.notify = function(msg, level, opts)
    table.insert(seen, { msg = tostring(msg), level = level or vim.log.levels.INFO })
    return orig(msg, level, opts)
  end
  H.defer(function()
    vim.notify = orig
  end)
  return seen
end

local function errors(seen)
  local out = {}
  for _, n in ipairs(seen) do
    if n.level >= vim.log.levels.ERROR then
      table.insert(out, n.msg)
    end
  end
  return out
end

-- A loopback port with nothing listening: bound, then closed.
local function dead_port()
  local tcp = vim.loop.new_tcp()
  assert(tcp:bind('127.0.0.1', 0))
  local port = tcp:getsockname().port
  tcp:close()
  return port
end

-- The plugin set up with exactly this model environment (nothing from the
-- real one: HOME is the test's, no settings file).
local function setup_env(H, env, opts)
  H.workspace()
  local base = { HOME = H.home, OPENAI_API_KEY = '', OPENAI_BASE_URL = '', OPENAI_MODEL = '', DASHSCOPE_API_KEY = '' }
  vim.opt.runtimepath:prepend(H.plugin)
  vim.cmd('runtime plugin/qwen.lua')
  vim.cmd('cd ' .. vim.fn.fnameescape(H.ws))
  require('qwen').setup(vim.tbl_extend('force', { cmd = { H.bin, '--stdio' }, cmd_env = vim.tbl_extend('force', base, env) }, opts or {}))
  vim.cmd('edit main.go')
  H.wait_client()
end

-- The notifications below WARN (what initialize said was missing).
local function warnings(seen)
  local out = {}
  for _, n in ipairs(seen) do
    if n.level == vim.log.levels.WARN then
      table.insert(out, n.msg)
    end
  end
  return out
end

-- Before any prompt: the statusline and the chat's header name what is
-- missing, and one warning says how to fix it, in the plugin's terms.
local function before_prompt(H, seen, want_status)
  H.wait(5000, function()
    return require('qwen').statusline() == want_status
  end, 'the statusline ' .. want_status .. ', got ' .. require('qwen').statusline())
  local warns = warnings(seen)
  H.eq(1, #warns, 'one warning: ' .. vim.inspect(warns))
  H.ok(not warns[1]:find('no model is configured', 1, true), 'not "no model": ' .. warns[1])
  H.contains(require('qwen.chat').header(), want_status:gsub('^qwen: ', ''), "the chat's header")
  return warns[1]
end

local function prompt_error(H, text)
  local t0 = vim.loop.hrtime()
  vim.cmd('QwenAsk ' .. text)
  local res = H.wait_turn(20000)
  local ms = (vim.loop.hrtime() - t0) / 1e6
  H.ok(res.error, 'the prompt to fail, got ' .. vim.inspect(res))
  return res.error, ms
end

return {
  {
    name = 'failures: a dead loopback URL fails at once, names model.baseUrl, and is told once',
    allow_errors = true,
    run = function(H)
      local seen = capture_notify(H)
      local url = string.format('http://127.0.0.1:%d/v1', dead_port())
      setup_env(H, { OPENAI_BASE_URL = url, OPENAI_MODEL = 'scripted', OPENAI_API_KEY = 'sk-test' })
      local err, ms = prompt_error(H, 'hello')
      H.log(string.format('the turn ended %.0f ms after the prompt (%s)', ms, err.message))
      H.eq('model_unreachable', (err.data or {}).reason, 'error.data.reason')
      local chat = table.concat(H.chat_lines(), '\n')
      H.ok(not chat:lower():find('retry', 1, true), 'no retry notice in the chat:\n' .. chat)
      local errs = errors(seen)
      H.eq(1, #errs, 'one error notification: ' .. vim.inspect(errs))
      H.contains(errs[1], 'model.baseUrl', 'the setting to change')
      H.contains(errs[1], 'OPENAI_BASE_URL', 'the variable to change')
      H.contains(errs[1], url, 'the URL tried')
      H.ok(not errs[1]:find('\n', 1, true), 'one line (no hit-enter prompt)')
      H.eq('qwen: idle [default] · scripted', require('qwen').statusline(), 'the statusline after the failure')
      -- a second turn: the chat says it again, the notification does not
      prompt_error(H, 'hello again')
      H.eq(1, #errors(seen), 'still one error notification')
      local _, n = table.concat(H.chat_lines(), '\n'):gsub('To fix it: set model.baseUrl', '')
      H.eq(2, n, 'the chat explains each failed turn')
    end,
  },
  {
    name = 'failures: a model name alone names model.baseUrl',
    allow_errors = true,
    run = function(H)
      local seen = capture_notify(H)
      setup_env(H, {}, { model = 'qwen3-coder-plus' })
      local warn = before_prompt(H, seen, 'qwen: no endpoint (model.baseUrl or OPENAI_API_KEY)')
      H.contains(warn, 'setup{ model = { baseUrl', "the plugin's own spelling of the setting")
      H.contains(warn, 'OPENAI_API_KEY', 'the variable')
      H.contains(warn, 'cmd_env', 'where the variable goes')
      local err = prompt_error(H, 'hello')
      H.eq('no_endpoint', (err.data or {}).reason, 'error.data.reason')
      H.eq('qwen: no endpoint (model.baseUrl or OPENAI_API_KEY) [default]', require('qwen').statusline(), 'the statusline after the prompt')
      local errs = errors(seen)
      H.eq(1, #errs, 'one error notification')
      H.contains(errs[1], 'model.baseUrl', 'the setting that is missing')
      H.contains(errs[1], 'setup{ model = { baseUrl', "the plugin's own spelling of it")
      H.ok(not errs[1]:find('no model is configured', 1, true), 'not "no model": the name is set')
    end,
  },
  {
    name = 'failures: a remote base URL without a key names the key variable',
    allow_errors = true,
    run = function(H)
      local seen = capture_notify(H)
      -- never contacted: without a key the server stops before any request
      setup_env(H, { OPENAI_BASE_URL = 'https://model.example.invalid/v1', OPENAI_MODEL = 'qwen3-coder-plus' })
      local warn = before_prompt(H, seen, 'qwen: no API key (OPENAI_API_KEY)')
      H.contains(warn, 'OPENAI_API_KEY, DASHSCOPE_API_KEY (in cmd_env or the environment)', 'where the key goes')
      H.ok(not warn:find('model.apiKey', 1, true), 'a key goes in cmd_env, not a settings file: ' .. warn)
      local err = prompt_error(H, 'hello')
      H.eq('no_api_key', (err.data or {}).reason, 'error.data.reason')
      local errs = errors(seen)
      H.eq(1, #errs, 'one error notification')
      H.contains(errs[1], 'OPENAI_API_KEY', 'the variable to set')
      H.contains(errs[1], 'model.apiKey', 'the setting to set')
    end,
  },
  {
    name = 'failures: an endpoint without a model name names model.name',
    allow_errors = true,
    run = function(H)
      local seen = capture_notify(H)
      setup_env(H, { OPENAI_BASE_URL = 'http://127.0.0.1:9/v1' })
      local warn = before_prompt(H, seen, 'qwen: no model name (model.name)')
      H.contains(warn, 'setup{ model = { name', "the plugin's own spelling of the setting")
      local err = prompt_error(H, 'hello')
      H.eq('no_model_name', (err.data or {}).reason, 'error.data.reason')
    end,
  },
  {
    name = "failures: a provider's unset key variable is named as a cmd_env variable, not a setting",
    allow_errors = true,
    run = function(H)
      local seen = capture_notify(H)
      H.workspace()
      H.user_settings({
        modelProviders = { openai = { { id = 'team-model', baseUrl = 'https://team.example.invalid/v1', envKey = 'TEAM_MODEL_KEY' } } },
        model = { name = 'team-model' },
      })
      local base = { HOME = H.home, OPENAI_API_KEY = '', OPENAI_BASE_URL = '', OPENAI_MODEL = '', DASHSCOPE_API_KEY = '', TEAM_MODEL_KEY = '' }
      vim.opt.runtimepath:prepend(H.plugin)
      vim.cmd('runtime plugin/qwen.lua')
      vim.cmd('cd ' .. vim.fn.fnameescape(H.ws))
      require('qwen').setup({ cmd = { H.bin, '--stdio' }, cmd_env = base })
      vim.cmd('edit main.go')
      H.wait_client()
      local warn = before_prompt(H, seen, 'qwen: no API key (TEAM_MODEL_KEY)')
      H.contains(warn, 'TEAM_MODEL_KEY (in cmd_env or the environment)', 'the variable and where it goes')
      H.ok(not warn:find('env.TEAM_MODEL_KEY', 1, true), "not the server's settings spelling: " .. warn)
    end,
  },
  {
    name = 'failures: nothing configured is "no model"',
    allow_errors = true,
    run = function(H)
      local seen = capture_notify(H)
      setup_env(H, {})
      H.wait(5000, function()
        return require('qwen').statusline() == 'qwen: no model'
      end, 'the statusline to say no model, got ' .. require('qwen').statusline())
      local warns = warnings(seen)
      H.eq(1, #warns, 'one warning')
      H.contains(warns[1], 'no model', 'says so')
      H.eq('qwen · no model (:checkhealth qwen)', require('qwen.chat').header(), "the chat's header")
    end,
  },
  {
    name = 'failures: qwen-ls not on PATH is told once, names the cmd option, and nothing retries it',
    allow_errors = true,
    run = function(H)
      local seen = capture_notify(H)
      H.workspace()
      vim.opt.runtimepath:prepend(H.plugin)
      vim.cmd('runtime plugin/qwen.lua')
      vim.cmd('cd ' .. vim.fn.fnameescape(H.ws))
      -- the default cmd, with a PATH that has no qwen-ls, nor any of the
      -- folders `go install` writes to
      local saved = { PATH = vim.env.PATH, HOME = vim.env.HOME, GOBIN = vim.env.GOBIN, GOPATH = vim.env.GOPATH }
      vim.env.PATH, vim.env.HOME, vim.env.GOBIN, vim.env.GOPATH = '/nonexistent', H.home, nil, nil
      H.defer(function()
        for k, v in pairs(saved) do
          vim.env[k] = v
        end
      end)
      require('qwen').setup({})
      for _, f in ipairs({ 'main.go', 'calc/calc.go', 'go.mod' }) do
        vim.cmd('edit ' .. f)
      end
      vim.wait(100, function() return false end, 10) -- the scheduled notice
      vim.cmd('QwenAsk hello')
      vim.cmd('QwenChat')
      vim.wait(100, function() return false end, 10)
      local errs = errors(seen)
      H.eq(1, #errs, 'one error notification for three buffers and a prompt: ' .. vim.inspect(errs))
      H.contains(errs[1], 'qwen-ls not found', 'what is wrong')
      H.contains(errs[1], 'setup{ cmd =', 'the option to set')
      H.contains(errs[1], 'go install', 'how to install it')
      H.ok(not errs[1]:find('\n', 1, true), 'one line')
      H.ok(vim.fn.strdisplaywidth(errs[1]) <= vim.v.echospace, 'it fits the command line (no hit-enter prompt): ' .. errs[1])
      H.eq('qwen: qwen-ls not found', require('qwen').statusline(), 'the statusline')
      H.eq(0, #require('qwen.util').get_clients('qwen'), 'no client started')
      H.eq('', vim.v.errmsg, "no error from Neovim's LSP client")
      H.contains(H.chat_lines(), 'qwen-ls is not running: see :checkhealth qwen', 'the chat says why nothing happens')
      vim.v.errmsg = ''
    end,
  },
  {
    name = 'failures: :checkhealth qwen tries the model and names what to change for a dead URL',
    allow_errors = true,
    run = function(H)
      local url = string.format('http://127.0.0.1:%d/v1', dead_port())
      setup_env(H, { OPENAI_BASE_URL = url, OPENAI_MODEL = 'scripted', OPENAI_API_KEY = 'sk-test' })
      vim.cmd('silent checkhealth qwen')
      local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
      H.contains(text, url, 'the endpoint tried')
      H.contains(text, 'ERROR', 'an error')
      H.contains(text, 'model.baseUrl', 'the setting to change')
      H.ok(not text:find('sk-test', 1, true), 'the key never shown')
    end,
  },
}
