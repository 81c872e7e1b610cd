-- File paths and file URIs on Linux, macOS and Windows, and finding the
-- qwen-ls program. Every function takes the system's flavour as a value
-- ('linux', 'darwin' or 'windows'; nil means the running one), so each
-- flavour is tested on any machine.
--
-- Windows paths come in either separator ("C:\Users\me", "C:/Users/me") and
-- as UNC paths ("\\server\share\dir"); they are compared in one form: "/"
-- separators and an upper-case drive letter. Windows and macOS (APFS by
-- default) compare names without regard to case.
local M = {}

M.running = (vim.fn.has('win32') == 1 and 'windows') or (vim.fn.has('mac') == 1 and 'darwin') or 'linux'

local function is_win(flavor)
  return (flavor or M.running) == 'windows'
end

--- Whether the flavour's usual file system ignores case.
function M.case_insensitive(flavor)
  flavor = flavor or M.running
  return flavor == 'windows' or flavor == 'darwin'
end

--- One spelling for a path: on Windows "/" separators, an upper-case drive
--- letter and a UNC path's leading "//" kept; everywhere repeated separators
--- collapsed and a trailing one dropped (except at a root: "/", "C:/").
function M.normalize(p, flavor)
  if p == nil or p == '' then
    return p
  end
  local win = is_win(flavor)
  if win then
    p = p:gsub('\\', '/')
  end
  local unc = win and p:match('^//[^/]') ~= nil
  p = p:gsub('/+', '/')
  if unc then
    p = '/' .. p
  end
  if win then
    p = p:gsub('^(%a):', function(d)
      return d:upper() .. ':'
    end)
    if p:match('^%a:$') then
      p = p .. '/'
    end
  end
  if #p > 1 and p:sub(-1) == '/' and not (win and p:match('^%a:/$')) then
    p = p:sub(1, -2)
  end
  return p
end

--- Whether p is absolute: "/..." on Unix; "C:/...", "C:\..." or a UNC path
--- on Windows.
function M.is_absolute(p, flavor)
  if is_win(flavor) then
    return p:match('^%a:[/\\]') ~= nil or p:match('^[/\\][/\\]') ~= nil
  end
  return p:sub(1, 1) == '/'
end

local function key(p, flavor)
  p = M.normalize(p, flavor)
  if M.case_insensitive(flavor) then
    p = p:lower()
  end
  return p
end

--- Whether a and b name the same path.
function M.same(a, b, flavor)
  return key(a, flavor) == key(b, flavor)
end

--- Whether path is root or inside it.
function M.inside(path, root, flavor)
  local p, r = key(path, flavor), key(root, flavor)
  if p == r then
    return true
  end
  if r:sub(-1) ~= '/' then
    r = r .. '/'
  end
  return p:sub(1, #r) == r
end

--- The folder holding p (normalized); a root is its own folder.
function M.dirname(p, flavor)
  p = M.normalize(p, flavor)
  local win = is_win(flavor)
  if p == '/' or (win and p:match('^%a:/$')) then
    return p
  end
  if win and p:match('^//[^/]+/[^/]+$') then
    return p -- \\server\share is a root
  end
  local dir = p:match('^(.*)/[^/]*$')
  if dir == nil then
    return '.'
  end
  if dir == '' then
    return '/'
  end
  if win and dir:match('^%a:$') then
    return dir .. '/'
  end
  return dir
end

--- p and name joined with "/" (which Windows accepts too).
function M.join(p, name, flavor)
  p = M.normalize(p, flavor)
  if p:sub(-1) == '/' then
    return p .. name
  end
  return p .. '/' .. name
end

--- The file URI of a path. Drive letters give "file:///C:/..." (the form
--- Neovim's LSP client sends; qwen-ls answers in the form a client used),
--- UNC paths "file://server/share/...".
function M.to_uri(p, flavor)
  if is_win(flavor) then
    p = M.normalize(p, flavor)
    local host, rest = p:match('^//([^/]+)(/.*)$')
    if host then
      -- vim.uri_from_fname encodes the path part; the host goes as it is.
      return 'file://' .. host .. vim.uri_from_fname(rest):sub(#'file://' + 1)
    end
  end
  return vim.uri_from_fname(p)
end

--- The path of a file URI, in the flavour's own form: "C:\Users\..." and
--- "\\server\share\..." on Windows, whichever way the drive letter is
--- written ("file:///c%3A/..." as VS Code sends it, "file:///C:/...").
--- Other URIs come back unchanged.
function M.from_uri(uri, flavor)
  if type(uri) ~= 'string' or not uri:match('^file:') then
    return uri
  end
  if is_win(flavor) then
    local host, rest = uri:match('^file://([^/]+)(/.*)$')
    if host and host ~= 'localhost' then
      local tail = vim.uri_to_fname('file://' .. rest)
      return '\\\\' .. host .. tail:gsub('/', '\\')
    end
    local fname = vim.uri_to_fname(uri)
    fname = fname:gsub('/', '\\'):gsub('^(%a):', function(d)
      return d:upper() .. ':'
    end)
    return fname
  end
  return vim.uri_to_fname(uri)
end

--- Where `go install` puts programs: $GOBIN, else the bin folder of the
--- first $GOPATH entry, else ~/go/bin.
function M.go_bin_dirs(env, flavor)
  local dirs = {}
  local gobin = env('GOBIN')
  if gobin and gobin ~= '' then
    table.insert(dirs, gobin)
  end
  local gopath = env('GOPATH')
  if gopath and gopath ~= '' then
    local first = vim.split(gopath, is_win(flavor) and ';' or ':', { plain = true })[1]
    if first ~= '' then
      table.insert(dirs, M.join(first, 'bin', flavor))
    end
  end
  local home = is_win(flavor) and (env('USERPROFILE') or env('HOME')) or env('HOME')
  if home and home ~= '' then
    local d = M.join(M.join(home, 'go', flavor), 'bin', flavor)
    if not vim.tbl_contains(vim.tbl_map(function(x)
      return key(x, flavor)
    end, dirs), key(d, flavor)) then
      table.insert(dirs, d)
    end
  end
  return dirs
end

--- Finds the server program named name (the first word of the cmd option).
--- A path (it holds a separator) is used as it is, with ".exe" added on
--- Windows when it lacks one; a bare name is looked up on PATH, then where
--- `go install` puts it (go_bin_dirs), as name.exe on Windows. Returns the
--- program's full path, or nil and the places tried.
---
--- o holds the flavour and, for the tests, the system's answers:
--- o.executable(p) (vim.fn.executable(p) == 1), o.exepath(name)
--- (vim.fn.exepath), o.env(name) (os.getenv).
function M.find_program(name, o)
  o = o or {}
  local flavor = o.flavor
  local win = is_win(flavor)
  local executable = o.executable or function(p)
    return vim.fn.executable(p) == 1
  end
  local exepath = o.exepath or vim.fn.exepath
  local env = o.env or os.getenv
  local tried = {}
  local function try(p)
    table.insert(tried, p)
    return executable(p)
  end
  local exe = function(p)
    if win and not p:lower():match('%.exe$') then
      return p .. '.exe'
    end
    return p
  end
  if type(name) ~= 'string' or name == '' then
    return nil, tried
  end
  if name:find('/', 1, true) or (win and name:find('\\', 1, true)) then
    if try(name) then
      return name, tried
    end
    if win and exe(name) ~= name and try(exe(name)) then
      return exe(name), tried
    end
    return nil, tried
  end
  table.insert(tried, 'PATH')
  if executable(name) then
    local full = exepath(name)
    return (full ~= nil and full ~= '') and full or name, tried
  end
  for _, dir in ipairs(M.go_bin_dirs(env, flavor)) do
    local p = M.join(dir, exe(name), flavor)
    if try(p) then
      return p, tried
    end
  end
  return nil, tried
end

return M
