; C++ definitions and references for the spider code graph.
; Capture names are documented in spider/graph/extract.py.
; Everything C has comes from c.scm (structs, unions, enums, typedef'd structs, functions
; and calls named by a plain identifier, field calls, includes); this file holds what C++
; adds. Namespaces do not qualify names; an out-of-line definition `void A::f()` is
; qualified A.f and attached to class A when A is defined in the same file.
;; inherits: c

; --- classes with a body
(class_specifier name: (type_identifier) @name.definition.class body: (_)) @definition.class
(type_definition type: (class_specifier !name body: (_))
                 declarator: (type_identifier) @name.definition.class) @definition.class

; --- functions and methods named otherwise than by a plain identifier; the declarator may
; be wrapped (pointers, references)
(function_definition
  declarator: (function_declarator
    declarator: [(field_identifier) (destructor_name) (operator_name)
                 (qualified_identifier)] @name.definition.function)) @definition.function
(function_definition
  declarator: (_ (function_declarator
    declarator: [(field_identifier) (destructor_name) (operator_name)
                 (qualified_identifier)] @name.definition.function))) @definition.function
(function_definition
  declarator: (_ (_ (function_declarator
    declarator: [(field_identifier) (destructor_name) (operator_name)
                 (qualified_identifier)] @name.definition.function)))) @definition.function
; conversion operators: `operator bool() {}`, `A::B::operator T&() {}` (named by the text
; before their parameter list: `operator bool`, see extract.definition_name_text)
(function_definition declarator: (operator_cast) @name.definition.function) @definition.function
(function_definition
  declarator: (qualified_identifier name: (operator_cast)) @name.definition.function) @definition.function
(function_definition
  declarator: (qualified_identifier
    name: (qualified_identifier name: (operator_cast))) @name.definition.function) @definition.function
(template_declaration
  (function_definition declarator: (operator_cast) @name.definition.function)) @definition.function
; explicit specialisations: `int f<A>(...) {}`, `X A::f<B>() {}`
(function_definition
  declarator: (_ declarator: (template_function name: (identifier) @name.definition.function))) @definition.function
(function_definition
  declarator: (_ declarator: (qualified_identifier
    scope: (_) @name.owner
    name: (template_function name: (identifier) @name.definition.function)))) @definition.function
(template_declaration
  (function_definition
    declarator: (_ declarator: (template_function name: (identifier) @name.definition.function)))) @definition.function
; the template <...> line belongs to the function
(template_declaration
  (function_definition
    declarator: (function_declarator
      declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)
                   (qualified_identifier)] @name.definition.function))) @definition.function
(template_declaration
  (function_definition
    declarator: (_ (function_declarator
      declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)
                   (qualified_identifier)] @name.definition.function)))) @definition.function
(template_declaration
  (class_specifier name: (type_identifier) @name.definition.class body: (_))) @definition.class
(template_declaration
  (struct_specifier name: (type_identifier) @name.definition.struct body: (_))) @definition.struct
; specialisations, `template <...> struct formatter<R, Char, ...> {...}`: named with their
; arguments (extract.definition_name_text), so each one's methods keep their own scope
(class_specifier name: (template_type) @name.definition.class body: (_)) @definition.class
(struct_specifier name: (template_type) @name.definition.struct body: (_)) @definition.struct
(template_declaration
  (class_specifier name: (template_type) @name.definition.class body: (_))) @definition.class
(template_declaration
  (struct_specifier name: (template_type) @name.definition.struct body: (_))) @definition.struct

; --- base classes
(base_class_clause [(type_identifier) (qualified_identifier)] @name.reference.inherits) @reference.inherits
(base_class_clause (template_type name: (type_identifier) @name.reference.inherits)) @reference.inherits

; --- calls (A::f is split into receiver A and name f) and instantiations
(call_expression function: (qualified_identifier) @name.reference.call) @reference.call
(call_expression function: (template_function name: (identifier) @name.reference.call)) @reference.call
(new_expression type: [(type_identifier) (qualified_identifier)] @name.reference.call) @reference.call
