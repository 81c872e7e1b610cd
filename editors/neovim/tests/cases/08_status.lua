-- The statusline component keeps to a fixed size and says what waits.
return {
  {
    name = 'status: a long shell command is cut at 40 characters with …',
    run = function(H)
      vim.opt.runtimepath:prepend(H.plugin)
      local status = require('qwen.status')
      local cmd = 'npm run test -- --filter=calc --reporter=verbose --coverage && echo done'
      status.set({ busy = true, tool = cmd, mode = 'default' })
      H.defer(function()
        status.set({ busy = false, tool = vim.NIL, mode = vim.NIL })
      end)
      local s = require('qwen').statusline()
      H.eq('qwen: working: npm run test -- --filter=calc --reporte… [default]', s, 'the statusline')
      H.eq(40, vim.fn.strchars(s:match('working: (.-) %[')), 'the detail in characters')
      status.set({ tool = 'Read calc.go' })
      H.eq('qwen: working: Read calc.go [default]', require('qwen').statusline(), 'a short title whole')
    end,
  },
  {
    name = 'status: what a configured model lacks is named in the plugin\'s terms; "no model" only when nothing is configured',
    run = function(H)
      vim.opt.runtimepath:prepend(H.plugin)
      local status = require('qwen.status')
      H.defer(function()
        status.set_setup(nil)
      end)
      local cases = {
        { { reason = 'no_model', settings = { 'model.name', 'model.baseUrl' }, env = { 'OPENAI_API_KEY', 'OPENAI_BASE_URL', 'OPENAI_MODEL' } }, 'qwen: no model' },
        { { reason = 'no_endpoint', settings = { 'model.baseUrl', 'model.apiKey' }, env = { 'OPENAI_API_KEY', 'OPENAI_BASE_URL' } }, 'qwen: no endpoint (model.baseUrl or OPENAI_API_KEY)' },
        { { reason = 'no_model_name', settings = { 'model.name' }, env = { 'OPENAI_MODEL' } }, 'qwen: no model name (model.name)' },
        { { reason = 'no_api_key', settings = { 'model.apiKey' }, env = { 'OPENAI_API_KEY', 'DASHSCOPE_API_KEY' } }, 'qwen: no API key (OPENAI_API_KEY)' },
        { { reason = 'no_api_key', settings = { 'env.TEAM_KEY' }, env = { 'TEAM_KEY' } }, 'qwen: no API key (TEAM_KEY)' },
      }
      for _, c in ipairs(cases) do
        status.set_setup(c[1])
        H.eq(c[2], require('qwen').statusline(), c[1].reason)
      end
      -- a failure that is not about a missing setting leaves the line alone
      status.set_setup(nil)
      status.set_setup({ reason = 'model_unreachable', settings = { 'model.baseUrl' }, env = { 'OPENAI_BASE_URL' } })
      H.eq('qwen: idle', require('qwen').statusline(), 'model_unreachable')
    end,
  },
  {
    name = 'status: while the final answer streams the statusline says answering, not the last tool',
    run = function(H)
      H.start('slow-answer.txtar', 'main.go')
      local titles = {}
      local status = require('qwen.status')
      H.type_prompt('What is in calc?')
      H.wait(10000, function()
        if status.tool then
          titles[status.tool] = true
        end
        return table.concat(H.chat_lines(), '\n'):find('The package', 1, true) ~= nil
      end, 'the answer to start streaming')
      H.ok(require('qwen.session').busy, 'the turn still runs')
      H.eq('qwen: answering [default] · scripted', require('qwen').statusline(), 'the statusline while the answer streams')
      H.wait_turn()
      H.eq('qwen: idle [default] · scripted', require('qwen').statusline(), 'the statusline after the turn')
      H.contains(H.chat_lines(), '▸ ✓ calc/calc.go  (completed)', 'the tool ran before the answer')
    end,
  },
}
