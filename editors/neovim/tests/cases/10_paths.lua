-- Paths, file URIs and finding qwen-ls on Linux, macOS and Windows. The
-- helpers take the system's flavour as a value, so Windows-shaped inputs
-- are tested here on any machine; finding the program also runs for real
-- (real files, vim.fn.executable and exepath) on this one.
local paths

--- Loads the plugin's paths module (each case starts with none loaded).
local function load(H)
  if not vim.tbl_contains(vim.opt.runtimepath:get(), H.plugin) then
    vim.opt.runtimepath:prepend(H.plugin)
  end
  paths = require('qwen.paths')
end

local function each(H, rows, fn)
  for _, r in ipairs(rows) do
    H.eq(r[#r], fn(unpack(r, 1, #r - 1)), vim.inspect(vim.list_slice(r, 1, #r - 1)))
  end
end

return {
  {
    name = 'paths: Windows paths in either separator, drive letters and UNC paths have one spelling',
    run = function(H)
      load(H)
      each(H, {
        { 'C:\\Users\\me\\proj', 'windows', 'C:/Users/me/proj' },
        { 'c:/Users/me/proj/', 'windows', 'C:/Users/me/proj' },
        { 'C:\\Users\\\\me\\proj\\main.go', 'windows', 'C:/Users/me/proj/main.go' },
        { 'C:\\', 'windows', 'C:/' },
        { 'd:', 'windows', 'D:/' },
        { '\\\\server\\share\\dir\\', 'windows', '//server/share/dir' },
        { '//server/share', 'windows', '//server/share' },
        { '/home/me//proj/', 'linux', '/home/me/proj' },
        { '/', 'linux', '/' },
        { 'C:\\odd\\name', 'linux', 'C:\\odd\\name' }, -- a backslash is a name's character on Unix
        { '/Users/Me/Proj/', 'darwin', '/Users/Me/Proj' },
      }, paths.normalize)
      -- Neovim 0.10's vim.fs.normalize (with opts.win) spells them the same
      -- way, except that it keeps the drive letter's case.
      if vim.fs and vim.fs.normalize and vim.fn.has('nvim-0.10') == 1 then
        for _, p in ipairs({ 'C:\\Users\\me\\proj', 'c:/Users/me/proj/', 'C:\\Users\\\\me\\main.go', 'C:\\', '\\\\server\\share\\dir\\' }) do
          local theirs = vim.fs.normalize(p, { win = true, expand_env = false }):gsub('^%a:', string.upper)
          H.eq(theirs, paths.normalize(p, 'windows'), 'vim.fs.normalize of ' .. p)
        end
        for _, p in ipairs({ '/home/me//proj/', '/' }) do
          H.eq(vim.fs.normalize(p, { win = false, expand_env = false }), paths.normalize(p, 'linux'), 'vim.fs.normalize of ' .. p)
        end
      end
      each(H, {
        { 'C:\\x', 'windows', true },
        { 'c:/x', 'windows', true },
        { '\\\\server\\share', 'windows', true },
        { 'x\\y', 'windows', false },
        { 'C:x', 'windows', false },
        { '/x', 'linux', true },
        { 'C:\\x', 'linux', false },
      }, paths.is_absolute)
    end,
  },
  {
    name = 'paths: inside a root, by case on case-insensitive systems only, and never by a name prefix',
    run = function(H)
      load(H)
      each(H, {
        { 'C:\\Users\\me\\proj\\main.go', 'C:\\Users\\me\\proj', 'windows', true },
        { 'c:/users/ME/Proj/main.go', 'C:\\Users\\me\\proj', 'windows', true },
        { 'C:\\Users\\me\\proj', 'c:/users/me/proj/', 'windows', true },
        { 'C:\\Users\\me\\project\\main.go', 'C:\\Users\\me\\proj', 'windows', false },
        { 'D:\\Users\\me\\proj\\main.go', 'C:\\Users\\me\\proj', 'windows', false },
        { 'C:\\anything', 'C:\\', 'windows', true },
        { '\\\\server\\share\\proj\\a.go', '//SERVER/share/proj', 'windows', true },
        { '/Users/me/Proj/main.go', '/Users/me/proj', 'darwin', true },
        { '/home/me/Proj/main.go', '/home/me/proj', 'linux', false },
        { '/home/me/proj/main.go', '/home/me/proj', 'linux', true },
        { '/home/me/proj2/main.go', '/home/me/proj', 'linux', false },
        { '/anything', '/', 'linux', true },
      }, paths.inside)
      each(H, {
        { 'C:\\Users\\me\\proj\\main.go', 'windows', 'C:/Users/me/proj' },
        { 'C:\\main.go', 'windows', 'C:/' },
        { 'C:\\', 'windows', 'C:/' },
        { '\\\\server\\share\\a.go', 'windows', '//server/share' },
        { '\\\\server\\share', 'windows', '//server/share' },
        { '/home/me/a.go', 'linux', '/home/me' },
        { '/a.go', 'linux', '/' },
        { '/', 'linux', '/' },
      }, paths.dirname)
      H.eq('C:/Users/me/.qwen', paths.join('C:\\Users\\me\\', '.qwen', 'windows'), 'join')
      H.eq('C:/.git', paths.join('C:\\', '.git', 'windows'), 'join at a drive root')
      H.ok(paths.same('C:\\Users\\ME', 'c:/users/me', 'windows'), 'same on Windows')
      H.ok(not paths.same('/home/ME', '/home/me', 'linux'), 'not the same on Linux')
    end,
  },
  {
    name = 'paths: file URIs with drive letters in both encodings, UNC paths, and back',
    run = function(H)
      load(H)
      each(H, {
        -- as VS Code sends it, and as Neovim does
        { 'file:///c%3A/Users/me/proj/main.go', 'windows', 'C:\\Users\\me\\proj\\main.go' },
        { 'file:///C:/Users/me/proj/main.go', 'windows', 'C:\\Users\\me\\proj\\main.go' },
        { 'file:///c:/Users/me/my%20proj/a%23b.go', 'windows', 'C:\\Users\\me\\my proj\\a#b.go' },
        { 'file://server/share/proj/main.go', 'windows', '\\\\server\\share\\proj\\main.go' },
        { 'file:///home/me/my%20proj/main.go', 'linux', '/home/me/my proj/main.go' },
        { 'file:///Users/me/main.go', 'darwin', '/Users/me/main.go' },
        { 'untitled:Untitled-1', 'windows', 'untitled:Untitled-1' },
      }, paths.from_uri)
      each(H, {
        { 'C:\\Users\\me\\proj\\main.go', 'windows', 'file:///C:/Users/me/proj/main.go' },
        { 'c:/Users/me/my proj/main.go', 'windows', 'file:///C:/Users/me/my%20proj/main.go' },
        { '\\\\server\\share\\proj\\main.go', 'windows', 'file://server/share/proj/main.go' },
        { '/home/me/my proj/main.go', 'linux', 'file:///home/me/my%20proj/main.go' },
      }, paths.to_uri)
      -- Round trips: a path gives its URI and the URI the same path.
      for _, p in ipairs({ 'C:\\Users\\me\\proj\\main.go', '\\\\server\\share\\proj\\x y.go' }) do
        H.eq(p, paths.from_uri(paths.to_uri(p, 'windows'), 'windows'), 'round trip of ' .. p)
      end
      H.eq('/tmp/a b/c.go', paths.from_uri(paths.to_uri('/tmp/a b/c.go', 'linux'), 'linux'), 'round trip on Linux')
    end,
  },
  {
    name = 'paths: qwen-ls.exe is found on PATH, in GOBIN, GOPATH\\bin or %USERPROFILE%\\go\\bin on Windows',
    run = function(H)
      load(H)
      local function sys(files, vars)
        local set = {}
        for _, f in ipairs(files) do
          set[f] = true
        end
        return {
          flavor = 'windows',
          executable = function(p)
            return set[p] == true
          end,
          exepath = function(name)
            return set['PATH:' .. name] or ''
          end,
          env = function(k)
            return vars[k]
          end,
        }
      end
      local home = { USERPROFILE = 'C:\\Users\\me' }
      -- On PATH: Windows' executable() and exepath() add the .exe.
      local o = sys({ 'qwen-ls' }, home)
      local set = { ['PATH:qwen-ls'] = 'C:\\Tools\\qwen-ls.exe' }
      o.exepath = function(name)
        return set['PATH:' .. name] or ''
      end
      H.eq('C:\\Tools\\qwen-ls.exe', (paths.find_program('qwen-ls', o)), 'on PATH')
      -- Not on PATH: where go install puts it.
      H.eq('C:/Users/me/go/bin/qwen-ls.exe', (paths.find_program('qwen-ls', sys({ 'C:/Users/me/go/bin/qwen-ls.exe' }, home))), '%USERPROFILE%\\go\\bin')
      H.eq('D:/gobin/qwen-ls.exe', (paths.find_program('qwen-ls', sys({ 'D:/gobin/qwen-ls.exe', 'C:/Users/me/go/bin/qwen-ls.exe' },
        { GOBIN = 'D:\\gobin\\', USERPROFILE = 'C:\\Users\\me' }))), 'GOBIN first')
      H.eq('E:/go/bin/qwen-ls.exe', (paths.find_program('qwen-ls', sys({ 'E:/go/bin/qwen-ls.exe' },
        { GOPATH = 'E:\\go;F:\\other', USERPROFILE = 'C:\\Users\\me' }))), 'the first GOPATH entry')
      -- A path in the option, with or without its .exe.
      H.eq('C:\\bin\\qwen-ls.exe', (paths.find_program('C:\\bin\\qwen-ls', sys({ 'C:\\bin\\qwen-ls.exe' }, home))), 'a path without .exe')
      H.eq('C:\\bin\\qwen-ls.exe', (paths.find_program('C:\\bin\\qwen-ls.exe', sys({ 'C:\\bin\\qwen-ls.exe' }, home))), 'a path with .exe')
      -- Nowhere: nil, and every place tried.
      local found, tried = paths.find_program('qwen-ls', sys({}, home))
      H.eq(nil, found, 'nowhere')
      H.eq({ 'PATH', 'C:/Users/me/go/bin/qwen-ls.exe' }, tried, 'the places tried')
    end,
  },
  {
    name = 'paths: qwen-ls is found on PATH or in ~/go/bin for real; the client starts the one found',
    run = function(H)
      load(H)
      local tmp = vim.fn.tempname()
      H.defer(function()
        vim.fn.delete(tmp, 'rf')
      end)
      local home = tmp .. '/home'
      vim.fn.mkdir(home .. '/go/bin', 'p')
      vim.fn.mkdir(tmp .. '/path', 'p')
      local in_gobin = home .. '/go/bin/qwen-ls'
      H.sh({ 'cp', H.bin, in_gobin })
      local env = function(k)
        return ({ HOME = home })[k]
      end
      local old = vim.env.PATH
      H.defer(function()
        vim.env.PATH = old
      end)
      vim.env.PATH = '/usr/bin:/bin'
      -- Not on PATH: ~/go/bin.
      H.eq(0, vim.fn.executable('qwen-ls'), 'no qwen-ls on the test PATH')
      H.eq(in_gobin, (paths.find_program('qwen-ls', { env = env })), 'in ~/go/bin')
      -- A file that is not executable does not count.
      vim.fn.setfperm(in_gobin, 'rw-r--r--')
      local found, tried = paths.find_program('qwen-ls', { env = env })
      H.eq(nil, found, 'not executable')
      H.eq({ 'PATH', in_gobin }, tried, 'tried')
      vim.fn.setfperm(in_gobin, 'rwxr-xr-x')
      -- On PATH, PATH wins: exepath's full path.
      local on_path = tmp .. '/path/qwen-ls'
      H.sh({ 'cp', H.bin, on_path })
      vim.env.PATH = tmp .. '/path:/usr/bin:/bin'
      H.eq(on_path, (paths.find_program('qwen-ls', { env = env })), 'on PATH')
      -- The client starts the program found, with the rest of the option.
      local cmd = require('qwen.client').server_cmd({ 'qwen-ls', '--stdio' })
      H.eq({ on_path, '--stdio' }, cmd, 'the server command')
      H.eq(nil, (require('qwen.client').server_cmd({ tmp .. '/nope/qwen-ls', '--stdio' })), 'a path that is not there')
    end,
  },
}
