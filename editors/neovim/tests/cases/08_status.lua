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
}
