-- The help file: helptags generate without errors, and every command,
-- option and keymap of the plugin is documented.
return {
  {
    name = 'docs: helptags, and every command, option and keymap has help',
    run = function(H)
      local tmp = vim.fn.tempname()
      vim.fn.mkdir(tmp .. '/doc', 'p')
      H.defer(function()
        vim.fn.delete(tmp, 'rf')
      end)
      H.sh({ 'cp', H.plugin .. '/doc/qwen.txt', tmp .. '/doc/' })
      vim.cmd('helptags ' .. vim.fn.fnameescape(tmp .. '/doc'))
      local tags = H.read(tmp .. '/doc/tags')
      H.ok(tags and #tags > 0, 'a tags file')
      vim.opt.runtimepath:prepend(H.plugin)
      vim.cmd('runtime plugin/qwen.lua')
      local names = vim.tbl_keys(vim.api.nvim_get_commands({}))
      local count = 0
      for _, name in ipairs(names) do
        if name:match('^Qwen') then
          count = count + 1
          H.contains(tags, ':' .. name .. '\t', 'a help tag for :' .. name)
        end
      end
      H.eq(7, count, 'the number of commands')
      local doc = H.read(tmp .. '/doc/qwen.txt')
      local defaults = require('qwen.config').defaults
      for key in pairs(defaults) do
        H.contains(tags, 'qwen-option-' .. key .. '\t', 'a help tag for option ' .. key)
      end
      for key, lhs in pairs(defaults.keymaps) do
        H.ok(doc:find('\n    ' .. key .. ' +' .. vim.pesc(lhs) .. ' ') ~= nil, 'the keymap ' .. key .. ' (' .. lhs .. ') in the keymap table')
      end
      vim.opt.runtimepath:prepend(tmp)
      vim.cmd('help :QwenUndoTurn')
      H.contains(vim.api.nvim_get_current_line(), '*:QwenUndoTurn*', 'the help for :QwenUndoTurn')
      vim.cmd('help qwen-review')
      H.contains(vim.api.nvim_get_current_line(), '*qwen-review*', 'the help for reviewing')
    end,
  },
}
