-- :QwenModel chooses the chat session's model among the configured ones;
-- each turn's tokens and the session's totals show in the chat.

-- Two models of ~/.qwen/settings.json, both served by the scripted model
-- (a loopback endpoint needs no key), and no model in the environment.
local function two_models(H, script)
  H.workspace()
  local m = H.model(script)
  H.user_settings({
    model = { name = 'model-a' },
    modelProviders = {
      openai = {
        { id = 'model-a', name = 'Model A', baseUrl = m.url },
        { id = 'model-b', name = 'Model B', baseUrl = m.url, description = 'the other one' },
      },
    },
  })
  vim.opt.runtimepath:prepend(H.plugin)
  vim.cmd('runtime plugin/qwen.lua')
  vim.cmd('cd ' .. vim.fn.fnameescape(H.ws))
  local env = { HOME = H.home, OPENAI_API_KEY = '', OPENAI_BASE_URL = '', DASHSCOPE_API_KEY = '', OPENAI_MODEL = '' }
  require('qwen').setup({ cmd = { H.bin, '--stdio' }, cmd_env = env })
  vim.cmd('edit main.go')
  H.wait_client()
end

--- What the chat's header shows, as drawn (the winbar from 0.8, else the
--- chat window's statusline).
--- Records every vim.notify of the test ({msg, level}), still showing it.
local function capture_notify(H)
  local seen = {}
  local orig = vim.notify
  vim.notify = function(msg, level, opts)
    table.insert(seen, { msg = tostring(msg), level = level })
    return orig(msg, level, opts)
  end
  H.defer(function()
    vim.notify = orig
  end)
  return seen
end

local function header(H)
  local chat = require('qwen.chat')
  local win = vim.fn.bufwinid(chat.buf)
  H.ok(win ~= -1, 'the chat to be open')
  local opt = vim.fn.has('nvim-0.8') == 1 and 'winbar' or 'statusline'
  local fmt = vim.api.nvim_win_get_option(win, opt)
  return vim.api.nvim_eval_statusline(fmt, { winid = win }).str
end

local function last_note(H)
  local lines = H.chat_lines()
  for i = #lines, 1, -1 do
    if lines[i]:find('^_— ') then
      return lines[i]
    end
  end
  return ''
end

return {
  {
    name = 'model: :QwenModel {id} and the picker switch the model mid-session; usage per turn and in total',
    run = function(H)
      local script = H.script(table.concat({
        '-- 01.response --',
        'text: First answer.',
        'usage: 900 40',
        '-- 02.response --',
        -- OpenAI's shape: usage with prompt_tokens_details.cached_tokens
        'raw: ' .. H.repo .. '/testdata/providers/openai/stream-usage-cached.sse',
        '-- 03.response --',
        'text: Third answer.',
        'usage: 1200 30',
        '',
      }, '\n'))
      two_models(H, script)
      local status = require('qwen.status')
      H.eq('model-a', status.model, 'the default model before any session')

      -- completion asks the server for the ids
      local t0 = vim.loop.hrtime()
      H.eq({ 'model-a', 'model-b' }, vim.fn.getcompletion('QwenModel ', 'cmdline'), 'completion lists both ids')
      H.eq({ 'model-b' }, vim.fn.getcompletion('QwenModel model-b', 'cmdline'), 'completion of a prefix')
      H.log(string.format('completion took %.1f ms', (vim.loop.hrtime() - t0) / 1e6))

      H.type_prompt('Say something.')
      local res = H.wait_turn()
      H.eq('end_turn', res.stopReason, 'the first turn ends')
      H.eq('model-a', H.requests()[1].model, 'the first request uses the default model')
      H.eq('_— end_turn · tokens 900 in, 40 out · session 900 in, 40 out_', last_note(H), 'the first turn\'s usage line')
      H.eq('qwen: idle [default] · model-a', require('qwen').statusline(), 'the statusline names the model')
      H.eq('qwen · model-a · session 900 in, 40 out', header(H), 'the chat header')

      -- :QwenModel {id}
      local sid = require('qwen.session').session_id
      vim.cmd('QwenModel model-b')
      H.wait(5000, function()
        return status.model == 'model-b'
      end, 'the model to change')
      H.eq(sid, require('qwen.session').session_id, 'the same session')
      H.eq('qwen: idle [default] · model-b', require('qwen').statusline(), 'the statusline shows the new model')
      H.contains(header(H), 'qwen · model-b', 'the header shows the new model')

      H.type_prompt('Again.')
      H.wait_turn()
      local reqs = H.requests()
      H.eq(2, #reqs, 'two requests')
      H.eq('model-b', reqs[2].model, 'the next request uses the chosen model')
      H.eq('_— end_turn · tokens 4096 in, 2 out, 3840 cached · session 4996 in, 42 out, 3840 cached_', last_note(H),
        'the second turn\'s usage line, with the cached tokens')

      -- the picker, with vim.ui.select answered as a person would
      local offered
      vim.ui.select = function(items, opts, cb)
        offered = vim.tbl_map(opts.format_item, items)
        for _, m in ipairs(items) do
          if m.id == 'model-a' then
            return cb(m)
          end
        end
        cb(nil)
      end
      vim.cmd('QwenModel')
      H.wait(5000, function()
        return status.model == 'model-a'
      end, 'the picked model to be set')
      H.eq({ '  Model A (model-a)  [openai]', '* Model B (model-b)  [openai]' }, offered, 'the picker marks the current model')
      H.eq('qwen: idle [default] · model-a', require('qwen').statusline(), 'the statusline after the picker')

      H.type_prompt('Once more.')
      H.wait_turn()
      reqs = H.requests()
      H.eq(3, #reqs, 'three requests')
      H.eq('model-a', reqs[3].model, 'the request after the picker uses the picked model')
      H.eq('_— end_turn · tokens 1200 in, 30 out · session 6196 in, 72 out, 3840 cached_', last_note(H), 'the third turn\'s line')

      local seen = {}
      local orig = vim.notify
      vim.notify = function(m, level)
        table.insert(seen, tostring(m))
      end
      vim.cmd('QwenStats')
      vim.notify = orig
      H.eq(1, #seen, ':QwenStats says one thing')
      local msg = seen[1]
      H.eq('qwen: model model-a · 3 turns: 6196 in, 72 out, 3840 cached (62% of input cached)', (msg:gsub(' · context.*$', '')), ':QwenStats')
      H.contains(msg, ' · context ', 'the context window in the stats')

      -- on request, the statusline shows the totals too
      require('qwen.config').options.statusline.tokens = true
      H.eq('qwen: idle [default] · model-a · 6.2k/72 tok', require('qwen').statusline(), 'the statusline with tokens')

      -- a change made elsewhere (another client of the session) arrives
      -- as current_model_update alone
      local c = H.client()
      require('qwen.util').request(c, 'qwen/setModel', { sessionId = require('qwen.session').session_id, modelId = 'model-b' }, function() end)
      H.wait(5000, function()
        return require('qwen').statusline() == 'qwen: idle [default] · model-b · 6.2k/72 tok'
      end, 'current_model_update to reach the statusline')
      H.contains(header(H), 'qwen · model-b', 'and the header')
    end,
  },
  {
    name = 'model: an unknown id is the server\'s message, shown once',
    allow_errors = true,
    run = function(H)
      two_models(H, nil)
      local seen = capture_notify(H)
      vim.cmd('QwenModel no-such-model')
      H.wait(5000, function()
        return #seen > 0
      end, 'a message')
      vim.wait(300, function()
        return false
      end, 10)
      H.eq(1, #seen, 'one message')
      H.eq(vim.log.levels.ERROR, seen[1].level, 'an error')
      H.contains(seen[1].msg, 'no-such-model', 'the message names the id')
      H.contains(seen[1].msg, 'model-a', 'and the configured ids')
      H.contains(seen[1].msg, 'model-b', 'both')
      H.eq('model-a', require('qwen.status').model, 'the model is unchanged')
    end,
  },
  {
    name = 'model: with no model configured :QwenModel says what to set',
    run = function(H)
      H.workspace()
      vim.opt.runtimepath:prepend(H.plugin)
      vim.cmd('runtime plugin/qwen.lua')
      vim.cmd('cd ' .. vim.fn.fnameescape(H.ws))
      local seen = capture_notify(H)
      local none = { HOME = H.home, OPENAI_API_KEY = '', OPENAI_BASE_URL = '', DASHSCOPE_API_KEY = '', OPENAI_MODEL = '' }
      require('qwen').setup({ cmd = { H.bin, '--stdio' }, cmd_env = none })
      vim.cmd('edit main.go')
      H.wait_client()
      H.wait(5000, function()
        return require('qwen.status').no_model
      end, 'the server to say no model')
      local before = #seen
      vim.ui.select = function()
        error('no picker without models')
      end
      vim.cmd('QwenModel')
      H.wait(5000, function()
        return #seen > before
      end, 'a message')
      local msg = seen[#seen].msg
      H.contains(msg, 'no model is configured', 'says so')
      H.contains(msg, 'model.name', 'the setting')
      H.contains(msg, 'OPENAI_MODEL', 'the variable')
      before = #seen
      vim.cmd('QwenModel model-a')
      H.eq(before + 1, #seen, 'an id says the same at once')
      H.contains(seen[#seen].msg, 'no model is configured', 'the same message')
      H.eq({}, vim.fn.getcompletion('QwenModel ', 'cmdline'), 'nothing to complete')
    end,
  },
}
